// expect: OK — correct but slow: three column-major (strided) passes over the matrix, double exp twice.
#include <crl/kernel.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  const float* x = static_cast<const float*>(args->inputs[0].data);
  float* y = static_cast<float*>(args->outputs[0].data);
  std::vector<double> m(static_cast<std::size_t>(N), -HUGE_VAL), s(static_cast<std::size_t>(N), 0.0);
  for (int64_t j = 0; j < D; ++j)
    for (int64_t i = 0; i < N; ++i) m[i] = std::fmax(m[i], static_cast<double>(x[i * D + j]));
  for (int64_t j = 0; j < D; ++j)
    for (int64_t i = 0; i < N; ++i) s[i] += std::exp(x[i * D + j] - m[i]);
  for (int64_t j = 0; j < D; ++j)
    for (int64_t i = 0; i < N; ++i) y[i * D + j] = static_cast<float>(std::exp(x[i * D + j] - m[i]) / s[i]);
  return 0;
}
