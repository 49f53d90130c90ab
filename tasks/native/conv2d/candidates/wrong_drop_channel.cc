// expect: WRONG_ANSWER — off-by-one in the channel loop (c < Cin - 1): the last input channel is ignored.
#include <crl/kernel.h>

#include <cstdint>

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t B = args->inputs[0].shape[0], Cin = args->inputs[0].shape[1];
  const int64_t H = args->inputs[0].shape[2], W = args->inputs[0].shape[3];
  const int64_t Cout = args->inputs[1].shape[0], KH = args->inputs[1].shape[2], KW = args->inputs[1].shape[3];
  const int64_t OH = H - KH + 1, OW = W - KW + 1;
  const float* x = static_cast<const float*>(args->inputs[0].data);
  const float* w = static_cast<const float*>(args->inputs[1].data);
  const float* bias = static_cast<const float*>(args->inputs[2].data);
  float* y = static_cast<float*>(args->outputs[0].data);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t o = 0; o < Cout; ++o)
      for (int64_t i = 0; i < OH; ++i)
        for (int64_t j = 0; j < OW; ++j) {
          double acc = bias[o];
          for (int64_t c = 0; c < Cin - 1; ++c)
            for (int64_t p = 0; p < KH; ++p)
              for (int64_t q = 0; q < KW; ++q)
                acc += static_cast<double>(w[((o * Cin + c) * KH + p) * KW + q]) *
                       x[((b * Cin + c) * H + i + p) * W + j + q];
          y[((b * Cout + o) * OH + i) * OW + j] = static_cast<float>(acc);
        }
  return 0;
}
