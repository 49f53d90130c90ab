// expect: OK — faster: diag(d) @ B is a row scaling, C[i,j] = d[i] * B[i,j]: O(N M), vectorised.
#include <crl/kernel.h>

#include <cstdint>

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[1].shape[0], M = args->inputs[1].shape[1];
  const float* __restrict d = static_cast<const float*>(args->inputs[0].data);
  const float* __restrict B = static_cast<const float*>(args->inputs[1].data);
  float* __restrict C = static_cast<float*>(args->outputs[0].data);
  for (int64_t i = 0; i < N; ++i) {
    const float s = d[i];
    for (int64_t j = 0; j < M; ++j) C[i * M + j] = s * B[i * M + j];
  }
  return 0;
}
