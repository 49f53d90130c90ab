// expect: OK — faster: i-k-j order on 4-row blocks of A (each B row reused 4x from L1), float
// accumulators in contiguous rows so the inner loop vectorises.
#include <crl/kernel.h>

#include <cstdint>
#include <vector>

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t M = args->inputs[0].shape[0], K = args->inputs[0].shape[1], N = args->inputs[1].shape[1];
  const float* __restrict A = static_cast<const float*>(args->inputs[0].data);
  const float* __restrict B = static_cast<const float*>(args->inputs[1].data);
  float* __restrict C = static_cast<float*>(args->outputs[0].data);
  constexpr int64_t R = 4;
  std::vector<float> acc(static_cast<std::vector<float>::size_type>(R * N));
  for (int64_t i0 = 0; i0 < M; i0 += R) {
    const int64_t rows = M - i0 < R ? M - i0 : R;
    for (auto& v : acc) v = 0.0f;
    float* __restrict c = acc.data();
    for (int64_t k = 0; k < K; ++k) {
      const float* __restrict b = B + k * N;
      for (int64_t r = 0; r < rows; ++r) {
        const float a = A[(i0 + r) * K + k];
        float* __restrict cr = c + r * N;
        for (int64_t j = 0; j < N; ++j) cr[j] += a * b[j];
      }
    }
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < N; ++j) C[(i0 + r) * N + j] = c[r * N + j];
  }
  return 0;
}
