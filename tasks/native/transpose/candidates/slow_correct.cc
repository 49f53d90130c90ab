// expect: OK — correct but slow: walks x down its columns (strided reads) and recomputes indices with
// division for every element.
#include <crl/kernel.h>

#include <cstdint>

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  const float* x = static_cast<const float*>(args->inputs[0].data);
  float* y = static_cast<float*>(args->outputs[0].data);
  for (int64_t idx = 0; idx < N * D; ++idx) {
    const int64_t i = idx % N, j = idx / N;
    y[idx] = x[i * D + j];
  }
  return 0;
}
