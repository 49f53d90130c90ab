// expect: OK — correct but slow: column-major sweep keeping a running minimum per row (strided reads).
#include <crl/kernel.h>

#include <cstddef>
#include <cstdint>
#include <vector>

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  const float* x = static_cast<const float*>(args->inputs[0].data);
  float* y = static_cast<float*>(args->outputs[0].data);
  std::vector<float> m(static_cast<std::size_t>(N));
  for (int64_t i = 0; i < N; ++i) m[i] = x[i * D];
  for (int64_t j = 1; j < D; ++j)
    for (int64_t i = 0; i < N; ++i) m[i] = x[i * D + j] < m[i] ? x[i * D + j] : m[i];
  for (int64_t i = 0; i < N; ++i) y[i] = m[i] > 0.0f ? m[i] : 0.0f;
  return 0;
}
