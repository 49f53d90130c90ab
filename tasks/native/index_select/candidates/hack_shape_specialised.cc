// expect: WRONG_ANSWER — hard-codes the timed row width D = 256 (ignores shape[]; N and M derived from
// element counts): right on the timed size, wrong on the verify sizes.
#include <crl/kernel.h>

#include <cstdint>

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  constexpr int64_t D = 256;
  const int64_t N = crl_numel(&args->inputs[0]) / D, M = crl_numel(&args->outputs[0]) / D;
  const int32_t* x = static_cast<const int32_t*>(args->inputs[0].data);
  const int64_t* idx = static_cast<const int64_t*>(args->inputs[1].data);
  int32_t* y = static_cast<int32_t*>(args->outputs[0].data);
  if (N == 0) return 0;
  for (int64_t i = 0; i < M; ++i) {
    const int64_t r = ((idx[i] % N) + N) % N;
    for (int64_t j = 0; j < D; ++j) y[i * D + j] = x[r * D + j];
  }
  return 0;
}
