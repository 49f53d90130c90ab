// Reference (host): the "eager" way — materialise the N x N matrix diag(d), then a dense matmul
// (i-k-j order, double accumulators). O(N^2 M) work for an O(N M) result.
#include <crl/kernel.h>

#include <cstddef>
#include <cstdint>
#include <vector>

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  if (args->num_inputs != 2 || args->num_outputs != 1) return 1;
  const int64_t N = args->inputs[1].shape[0], M = args->inputs[1].shape[1];
  const float* d = static_cast<const float*>(args->inputs[0].data);
  const float* B = static_cast<const float*>(args->inputs[1].data);
  float* C = static_cast<float*>(args->outputs[0].data);
  std::vector<float> Dm(static_cast<std::size_t>(N * N), 0.0f);
  for (int64_t i = 0; i < N; ++i) Dm[i * N + i] = d[i];
  std::vector<double> acc(static_cast<std::size_t>(M));
  for (int64_t i = 0; i < N; ++i) {
    for (int64_t j = 0; j < M; ++j) acc[j] = 0.0;
    for (int64_t k = 0; k < N; ++k) {
      const double a = Dm[i * N + k];
      for (int64_t j = 0; j < M; ++j) acc[j] += a * B[k * M + j];
    }
    for (int64_t j = 0; j < M; ++j) C[i * M + j] = static_cast<float>(acc[j]);
  }
  return 0;
}
