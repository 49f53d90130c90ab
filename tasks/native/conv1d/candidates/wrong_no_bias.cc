// expect: WRONG_ANSWER — forgets to add the bias.
#include <crl/kernel.h>

#include <cstdint>

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t B = args->inputs[0].shape[0], Cin = args->inputs[0].shape[1], L = args->inputs[0].shape[2];
  const int64_t Cout = args->inputs[1].shape[0], K = args->inputs[1].shape[2];
  const int64_t Lout = L - K + 1;
  const float* x = static_cast<const float*>(args->inputs[0].data);
  const float* w = static_cast<const float*>(args->inputs[1].data);
  float* y = static_cast<float*>(args->outputs[0].data);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t o = 0; o < Cout; ++o)
      for (int64_t t = 0; t < Lout; ++t) {
        double acc = 0.0;
        for (int64_t c = 0; c < Cin; ++c)
          for (int64_t k = 0; k < K; ++k)
            acc += static_cast<double>(w[(o * Cin + c) * K + k]) * x[(b * Cin + c) * L + t + k];
        y[(b * Cout + o) * Lout + t] = static_cast<float>(acc);
      }
  return 0;
}
