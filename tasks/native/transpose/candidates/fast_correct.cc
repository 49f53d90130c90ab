// expect: OK — faster: cache-blocked transpose in 32 x 32 tiles (both x and y touched a cache line at a time).
#include <crl/kernel.h>

#include <cstdint>

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  const float* __restrict x = static_cast<const float*>(args->inputs[0].data);
  float* __restrict y = static_cast<float*>(args->outputs[0].data);
  constexpr int64_t B = 32;
  for (int64_t i0 = 0; i0 < N; i0 += B) {
    const int64_t i1 = i0 + B < N ? i0 + B : N;
    for (int64_t j0 = 0; j0 < D; j0 += B) {
      const int64_t j1 = j0 + B < D ? j0 + B : D;
      for (int64_t j = j0; j < j1; ++j)
        for (int64_t i = i0; i < i1; ++i) y[j * N + i] = x[i * D + j];
    }
  }
  return 0;
}
