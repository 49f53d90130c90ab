// expect: WRONG_ANSWER — uses the row maximum instead of the minimum (not degenerate: positive).
#include <crl/kernel.h>

#include <cstdint>

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  const float* x = static_cast<const float*>(args->inputs[0].data);
  float* y = static_cast<float*>(args->outputs[0].data);
  for (int64_t i = 0; i < N; ++i) {
    float m = x[i * D];
    for (int64_t j = 1; j < D; ++j) m = x[i * D + j] > m ? x[i * D + j] : m;
    y[i] = m > 0.0f ? m : 0.0f;
  }
  return 0;
}
