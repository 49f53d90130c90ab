// expect: WRONG_ANSWER — copies x straight through (treats the [N, D] -> [D, N] reshape as a transpose).
#include <crl/kernel.h>

#include <cstdint>

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  const float* x = static_cast<const float*>(args->inputs[0].data);
  float* y = static_cast<float*>(args->outputs[0].data);
  for (int64_t k = 0; k < N * D; ++k) y[k] = x[k];
  return 0;
}
