// expect: WRONG_ANSWER — exclusive scan (y[i, j] = sum over k < j) instead of inclusive.
#include <crl/kernel.h>

#include <cstdint>

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  const float* x = static_cast<const float*>(args->inputs[0].data);
  float* y = static_cast<float*>(args->outputs[0].data);
  for (int64_t i = 0; i < N; ++i) {
    double acc = 0.0;
    for (int64_t j = 0; j < D; ++j) {
      y[i * D + j] = static_cast<float>(acc);
      acc += x[i * D + j];
    }
  }
  return 0;
}
