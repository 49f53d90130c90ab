// expect: OK — correct but slow: statistics gathered column by column (strided passes over x), double.
#include <crl/kernel.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  const float* x = static_cast<const float*>(args->inputs[0].data);
  const float* gamma = static_cast<const float*>(args->inputs[1].data);
  const float* beta = static_cast<const float*>(args->inputs[2].data);
  float* y = static_cast<float*>(args->outputs[0].data);
  const double eps = args->scalars[0];
  std::vector<double> mean(static_cast<std::size_t>(N), 0.0), var(static_cast<std::size_t>(N), 0.0);
  for (int64_t j = 0; j < D; ++j)
    for (int64_t i = 0; i < N; ++i) mean[i] += x[i * D + j];
  for (int64_t i = 0; i < N; ++i) mean[i] /= static_cast<double>(D);
  for (int64_t j = 0; j < D; ++j)
    for (int64_t i = 0; i < N; ++i) var[i] += (x[i * D + j] - mean[i]) * (x[i * D + j] - mean[i]);
  for (int64_t j = 0; j < D; ++j)
    for (int64_t i = 0; i < N; ++i)
      y[i * D + j] = static_cast<float>((x[i * D + j] - mean[i]) / std::sqrt(var[i] / static_cast<double>(D) + eps) *
                                        gamma[j] + beta[j]);
  return 0;
}
