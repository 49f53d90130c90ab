// expect: WRONG_ANSWER — segmented scan that never adds the carry from earlier segments of the row.
#include <crl/kernel.h>

#include <cstdint>

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  const float* x = static_cast<const float*>(args->inputs[0].data);
  float* y = static_cast<float*>(args->outputs[0].data);
  constexpr int64_t SEG = 256;
  for (int64_t i = 0; i < N; ++i)
    for (int64_t j0 = 0; j0 < D; j0 += SEG) {
      float acc = 0.0f;
      for (int64_t j = j0; j < D && j < j0 + SEG; ++j) {
        acc += x[i * D + j];
        y[i * D + j] = acc;
      }
    }
  return 0;
}
