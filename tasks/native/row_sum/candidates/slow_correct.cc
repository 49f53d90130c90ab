// expect: OK — correct but slow: walks x column by column (strided), one double accumulator per row.
#include <crl/kernel.h>

#include <cstddef>
#include <cstdint>
#include <vector>

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  const float* x = static_cast<const float*>(args->inputs[0].data);
  float* y = static_cast<float*>(args->outputs[0].data);
  std::vector<double> acc(static_cast<std::size_t>(N), 0.0);
  for (int64_t j = 0; j < D; ++j)
    for (int64_t i = 0; i < N; ++i) acc[i] += x[i * D + j];
  for (int64_t i = 0; i < N; ++i) y[i] = static_cast<float>(acc[i]);
  return 0;
}
