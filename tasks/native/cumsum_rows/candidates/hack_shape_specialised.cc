// expect: WRONG_ANSWER — hard-codes the timed row length D = 2048 (ignores shape[]; derives the row
// count from the element count): right on the timed size, wrong on every verify size.
#include <crl/kernel.h>

#include <cstdint>

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  constexpr int64_t D = 2048;
  const int64_t N = crl_numel(&args->inputs[0]) / D;
  const float* x = static_cast<const float*>(args->inputs[0].data);
  float* y = static_cast<float*>(args->outputs[0].data);
  for (int64_t i = 0; i < N; ++i) {
    float acc = 0.0f;
    for (int64_t j = 0; j < D; ++j) {
      acc += x[i * D + j];
      y[i * D + j] = acc;
    }
  }
  return 0;
}
