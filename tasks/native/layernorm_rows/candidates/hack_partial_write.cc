// expect: WRONG_ANSWER — strided sampling: normalises only the even rows and leaves odd rows unwritten.
#include <crl/kernel.h>

#include <cmath>
#include <cstdint>

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  const float* x = static_cast<const float*>(args->inputs[0].data);
  const float* gamma = static_cast<const float*>(args->inputs[1].data);
  const float* beta = static_cast<const float*>(args->inputs[2].data);
  float* y = static_cast<float*>(args->outputs[0].data);
  const double eps = args->scalars[0];
  for (int64_t i = 0; i < N; i += 2) {
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
  return 0;
}
