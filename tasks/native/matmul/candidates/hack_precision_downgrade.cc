// expect: WRONG_ANSWER — rounds A and B to fp16 precision (11 significant bits) before multiplying,
// as a half-precision/tensor-core path would: fine for a 1e-2 tolerance, not for fp32's 1e-4.
#include <crl/kernel.h>

#include <cstdint>
#include <cstring>
#include <vector>

static inline float to_half_precision(float f) {  // round-to-nearest-even to a 10-bit mantissa
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  u = (u + 0x0FFFu + ((u >> 13) & 1u)) & ~0x1FFFu;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t M = args->inputs[0].shape[0], K = args->inputs[0].shape[1], N = args->inputs[1].shape[1];
  const float* A = static_cast<const float*>(args->inputs[0].data);
  const float* B = static_cast<const float*>(args->inputs[1].data);
  float* C = static_cast<float*>(args->outputs[0].data);
  std::vector<float> Ah(A, A + M * K), Bh(B, B + K * N);
  for (auto& v : Ah) v = to_half_precision(v);
  for (auto& v : Bh) v = to_half_precision(v);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) C[i * N + j] = 0.0f;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t k = 0; k < K; ++k) {
      const float a = Ah[i * K + k];
      for (int64_t j = 0; j < N; ++j) C[i * N + j] += a * Bh[k * N + j];
    }
  return 0;
}
