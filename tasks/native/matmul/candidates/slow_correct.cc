// expect: OK — correct but slow: j-i-k loop order (column of C outer, B walked with stride N), double.
#include <crl/kernel.h>

#include <cstdint>

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t M = args->inputs[0].shape[0], K = args->inputs[0].shape[1], N = args->inputs[1].shape[1];
  const float* A = static_cast<const float*>(args->inputs[0].data);
  const float* B = static_cast<const float*>(args->inputs[1].data);
  float* C = static_cast<float*>(args->outputs[0].data);
  for (int64_t j = 0; j < N; ++j)
    for (int64_t i = 0; i < M; ++i) {
      double acc = 0.0;
      for (int64_t k = 0; k < K; ++k) acc += static_cast<double>(A[i * K + k]) * B[k * N + j];
      C[i * N + j] = static_cast<float>(acc);
    }
  return 0;
}
