// Reference (cuda): the "eager" way — materialise diag(d) as an N x N matrix in a scratch buffer,
// then a naive one-thread-per-output matmul over it.
#include <crl/kernel.h>
#include <cuda_runtime.h>

#include <cstdint>

__global__ void build_diag(const float* d, float* Dm, int64_t N) {
  const int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (idx >= N * N) return;
  const int64_t i = idx / N, k = idx % N;
  Dm[idx] = i == k ? d[i] : 0.0f;
}

__global__ void matmul_naive(const float* Dm, const float* B, float* C, int64_t N, int64_t M) {
  const int64_t j = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t i = blockIdx.y;
  if (j >= M) return;
  float acc = 0.0f;
  for (int64_t k = 0; k < N; ++k) acc += Dm[i * N + k] * B[k * M + j];
  C[i * M + j] = acc;
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  if (args->num_inputs != 2 || args->num_outputs != 1) return 1;
  const int64_t N = args->inputs[1].shape[0], M = args->inputs[1].shape[1];
  cudaStream_t s = static_cast<cudaStream_t>(args->stream);
  float* Dm = nullptr;
  if (cudaMallocAsync(&Dm, static_cast<size_t>(N * N) * sizeof(float), s) != cudaSuccess) return 1;
  build_diag<<<static_cast<unsigned>((N * N + 255) / 256), 256, 0, s>>>(static_cast<const float*>(args->inputs[0].data),
                                                                       Dm, N);
  dim3 grid(static_cast<unsigned>((M + 127) / 128), static_cast<unsigned>(N));
  matmul_naive<<<grid, 128, 0, s>>>(Dm, static_cast<const float*>(args->inputs[1].data),
                                    static_cast<float*>(args->outputs[0].data), N, M);
  cudaFreeAsync(Dm, s);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
