// expect: WRONG_ANSWER — normalises over columns (softmax along dim 0) instead of along rows.
#include <crl/kernel.h>

#include <cmath>
#include <cstdint>

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  const float* x = static_cast<const float*>(args->inputs[0].data);
  float* y = static_cast<float*>(args->outputs[0].data);
  for (int64_t j = 0; j < D; ++j) {
    double m = x[j];
    for (int64_t i = 1; i < N; ++i) m = x[i * D + j] > m ? x[i * D + j] : m;
    double sum = 0.0;
    for (int64_t i = 0; i < N; ++i) sum += std::exp(x[i * D + j] - m);
    for (int64_t i = 0; i < N; ++i) y[i * D + j] = static_cast<float>(std::exp(x[i * D + j] - m) / sum);
  }
  return 0;
}
