// expect: WRONG_ANSWER — blocked transpose that skips the partial edge tiles (right only when N and D
// are multiples of 32; the rest of y is left unwritten).
#include <crl/kernel.h>

#include <cstdint>

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  const float* x = static_cast<const float*>(args->inputs[0].data);
  float* y = static_cast<float*>(args->outputs[0].data);
  constexpr int64_t B = 32;
  for (int64_t i0 = 0; i0 + B <= N; i0 += B)
    for (int64_t j0 = 0; j0 + B <= D; j0 += B)
      for (int64_t j = j0; j < j0 + B; ++j)
        for (int64_t i = i0; i < i0 + B; ++i) y[j * N + i] = x[i * D + j];
  return 0;
}
