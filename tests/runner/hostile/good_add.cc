// A correct candidate: y = a + b (float32, any shape). The control case.
#include "crl/kernel.h"

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  if (args->num_inputs != 2 || args->num_outputs != 1) return 1;
  const float* a = static_cast<const float*>(args->inputs[0].data);
  const float* b = static_cast<const float*>(args->inputs[1].data);
  float* y = static_cast<float*>(args->outputs[0].data);
  int64_t n = crl_numel(&args->outputs[0]);
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
  return 0;
}
