// expect: WRONG_ANSWER — tiled kernel that only iterates over full K tiles: the last partial tile is
// dropped (right only when K % 32 == 0; edge M/N tiles are handled).
#include <crl/kernel.h>
#include <cuda_runtime.h>

#include <cstdint>

constexpr int T = 32;

__global__ void matmul_full_k_tiles(const float* A, const float* B, float* C, int64_t M, int64_t K, int64_t N) {
  __shared__ float As[T][T + 1];
  __shared__ float Bs[T][T + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t i = static_cast<int64_t>(blockIdx.y) * T + ty, j = static_cast<int64_t>(blockIdx.x) * T + tx;
  float acc = 0.0f;
  for (int64_t k0 = 0; k0 + T <= K; k0 += T) {
    As[ty][tx] = i < M ? A[i * K + k0 + tx] : 0.0f;
    Bs[ty][tx] = j < N ? B[(k0 + ty) * N + j] : 0.0f;
    __syncthreads();
    for (int k = 0; k < T; ++k) acc += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  if (i < M && j < N) C[i * N + j] = acc;
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t M = args->inputs[0].shape[0], K = args->inputs[0].shape[1], N = args->inputs[1].shape[1];
  dim3 grid(static_cast<unsigned>((N + T - 1) / T), static_cast<unsigned>((M + T - 1) / T));
  matmul_full_k_tiles<<<grid, dim3(T, T), 0, static_cast<cudaStream_t>(args->stream)>>>(
      static_cast<const float*>(args->inputs[0].data), static_cast<const float*>(args->inputs[1].data),
      static_cast<float*>(args->outputs[0].data), M, K, N);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
