// Reference (cuda): one thread per output element, straight K loop from global memory.
#include <crl/kernel.h>
#include <cuda_runtime.h>

#include <cstdint>

__global__ void matmul_ref(const float* A, const float* B, float* C, int64_t M, int64_t K, int64_t N) {
  const int64_t j = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t i = blockIdx.y;
  if (j >= N || i >= M) return;
  float acc = 0.0f;
  for (int64_t k = 0; k < K; ++k) acc += A[i * K + k] * B[k * N + j];
  C[i * N + j] = acc;
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  if (args->num_inputs != 2 || args->num_outputs != 1) return 1;
  const int64_t M = args->inputs[0].shape[0], K = args->inputs[0].shape[1], N = args->inputs[1].shape[1];
  dim3 grid(static_cast<unsigned>((N + 127) / 128), static_cast<unsigned>(M));
  matmul_ref<<<grid, 128, 0, static_cast<cudaStream_t>(args->stream)>>>(
      static_cast<const float*>(args->inputs[0].data), static_cast<const float*>(args->inputs[1].data),
      static_cast<float*>(args->outputs[0].data), M, K, N);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
