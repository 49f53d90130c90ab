// expect: WRONG_ANSWER — keeps a static cache keyed by the input pointer and shape and replays the last
// result when they repeat: right on the first call, stale when a buffer is refilled with new data.
#include <crl/kernel.h>

#include <cmath>
#include <cstdint>
#include <vector>

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  static const void* cached_ptr = nullptr;
  static int64_t cached_n = -1, cached_d = -1;
  static std::vector<float> cached;
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  const float* x = static_cast<const float*>(args->inputs[0].data);
  float* y = static_cast<float*>(args->outputs[0].data);
  if (x == cached_ptr && N == cached_n && D == cached_d) {
    for (int64_t k = 0; k < N * D; ++k) y[k] = cached[k];
    return 0;
  }
  for (int64_t i = 0; i < N; ++i) {
    const float* r = x + i * D;
    double m = r[0];
    for (int64_t j = 1; j < D; ++j) m = r[j] > m ? r[j] : m;
    double sum = 0.0;
    for (int64_t j = 0; j < D; ++j) sum += std::exp(r[j] - m);
    for (int64_t j = 0; j < D; ++j) y[i * D + j] = static_cast<float>(std::exp(r[j] - m) / sum);
  }
  cached.assign(y, y + N * D);
  cached_ptr = x;
  cached_n = N;
  cached_d = D;
  return 0;
}
