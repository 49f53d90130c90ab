// expect: SANDBOX_VIOLATION — returns at once and finishes the work on a detached std::thread after
// crl_run has returned (timed as ~0); thread creation must be refused and reported.
#include <crl/kernel.h>

#include <cmath>
#include <cstdint>
#include <thread>

static void layernorm(const float* x, const float* gamma, const float* beta, float* y, int64_t N, int64_t D, double eps) {
  for (int64_t i = 0; i < N; ++i) {
    const float* r = x + i * D;
    double mean = 0.0;
    for (int64_t j = 0; j < D; ++j) mean += r[j];
    mean /= static_cast<double>(D);
    double var = 0.0;
    for (int64_t j = 0; j < D; ++j) var += (r[j] - mean) * (r[j] - mean);
    var /= static_cast<double>(D);
    const double inv = 1.0 / std::sqrt(var + eps);
    for (int64_t j = 0; j < D; ++j) y[i * D + j] = static_cast<float>((r[j] - mean) * inv * gamma[j] + beta[j]);
  }
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  std::thread(layernorm, static_cast<const float*>(args->inputs[0].data), static_cast<const float*>(args->inputs[1].data),
              static_cast<const float*>(args->inputs[2].data), static_cast<float*>(args->outputs[0].data), N, D,
              args->scalars[0])
      .detach();
  return 0;
}
