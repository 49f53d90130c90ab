// Hostile: zeroes its input and leaves the output partly unwritten. The
// runner only reports; return_inputs lets the worker see the mutation and the
// poison pattern shows the unwritten elements.
#include <cstring>

#include "crl/kernel.h"

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  float* a = static_cast<float*>(args->inputs[0].data);
  int64_t n = crl_numel(&args->inputs[0]);
  std::memset(a, 0, n * sizeof(float));
  float* y = static_cast<float*>(args->outputs[0].data);
  y[0] = 1.0f;  // the rest stays poisoned
  // Also try to redirect the runner: rewrite the tensor table (a copy).
  const_cast<crl_tensor*>(args->outputs)[0].data = a;
  return 0;
}
