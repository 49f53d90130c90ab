// expect: WRONG_ANSWER — off-by-one diagonal index: row i is scaled by d[(i + 1) % N].
#include <crl/kernel.h>

#include <cstdint>

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[1].shape[0], M = args->inputs[1].shape[1];
  const float* d = static_cast<const float*>(args->inputs[0].data);
  const float* B = static_cast<const float*>(args->inputs[1].data);
  float* C = static_cast<float*>(args->outputs[0].data);
  for (int64_t i = 0; i < N; ++i)
    for (int64_t j = 0; j < M; ++j) C[i * M + j] = d[(i + 1) % N] * B[i * M + j];
  return 0;
}
