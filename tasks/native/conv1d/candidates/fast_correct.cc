// expect: OK — faster: for each (b, o) the whole output row is accumulated at once; the innermost
// loop runs over t with a fixed weight (contiguous, vectorises), float accumulators.
#include <crl/kernel.h>

#include <cstdint>

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t B = args->inputs[0].shape[0], Cin = args->inputs[0].shape[1], L = args->inputs[0].shape[2];
  const int64_t Cout = args->inputs[1].shape[0], K = args->inputs[1].shape[2];
  const int64_t Lout = L - K + 1;
  const float* __restrict x = static_cast<const float*>(args->inputs[0].data);
  const float* __restrict w = static_cast<const float*>(args->inputs[1].data);
  const float* __restrict bias = static_cast<const float*>(args->inputs[2].data);
  float* __restrict y = static_cast<float*>(args->outputs[0].data);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t o = 0; o < Cout; ++o) {
      float* __restrict yr = y + (b * Cout + o) * Lout;
      for (int64_t t = 0; t < Lout; ++t) yr[t] = bias[o];
      for (int64_t c = 0; c < Cin; ++c) {
        const float* __restrict xr = x + (b * Cin + c) * L;
        const float* wr = w + (o * Cin + c) * K;
        for (int64_t k = 0; k < K; ++k) {
          const float wk = wr[k];
          const float* __restrict xs = xr + k;
          for (int64_t t = 0; t < Lout; ++t) yr[t] += wk * xs[t];
        }
      }
    }
  return 0;
}
