// expect: WRONG_ANSWER — converts A and B to __half (fp32 accumulate), as a tensor-core fp16 path
// would: passes a 1e-2 tolerance, must fail fp32's 1e-4.
#include <crl/kernel.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

__global__ void matmul_half_inputs(const float* A, const float* B, float* C, int64_t M, int64_t K, int64_t N) {
  const int64_t j = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t i = blockIdx.y;
  if (j >= N || i >= M) return;
  float acc = 0.0f;
  for (int64_t k = 0; k < K; ++k)
    acc += __half2float(__float2half(A[i * K + k])) * __half2float(__float2half(B[k * N + j]));
  C[i * N + j] = acc;
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t M = args->inputs[0].shape[0], K = args->inputs[0].shape[1], N = args->inputs[1].shape[1];
  dim3 grid(static_cast<unsigned>((N + 127) / 128), static_cast<unsigned>(M));
  matmul_half_inputs<<<grid, 128, 0, static_cast<cudaStream_t>(args->stream)>>>(
      static_cast<const float*>(args->inputs[0].data), static_cast<const float*>(args->inputs[1].data),
      static_cast<float*>(args->outputs[0].data), M, K, N);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
