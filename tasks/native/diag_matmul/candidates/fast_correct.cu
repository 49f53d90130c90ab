// expect: OK — faster: fused row scale C[i,j] = d[i] * B[i,j], float4 when M % 4 == 0.
#include <crl/kernel.h>
#include <cuda_runtime.h>

#include <cstdint>

__global__ void row_scale_vec4(const float* __restrict__ d, const float4* __restrict__ B, float4* __restrict__ C,
                               int64_t M4) {
  const int64_t j = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (j >= M4) return;
  const float s = d[blockIdx.y];
  const float4 v = B[blockIdx.y * M4 + j];
  C[blockIdx.y * M4 + j] = make_float4(s * v.x, s * v.y, s * v.z, s * v.w);
}

__global__ void row_scale(const float* __restrict__ d, const float* __restrict__ B, float* __restrict__ C, int64_t M) {
  const int64_t j = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (j >= M) return;
  C[blockIdx.y * M + j] = d[blockIdx.y] * B[blockIdx.y * M + j];
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[1].shape[0], M = args->inputs[1].shape[1];
  cudaStream_t s = static_cast<cudaStream_t>(args->stream);
  const float* d = static_cast<const float*>(args->inputs[0].data);
  if (M % 4 == 0) {
    const int64_t M4 = M / 4;
    row_scale_vec4<<<dim3(static_cast<unsigned>((M4 + 255) / 256), static_cast<unsigned>(N)), 256, 0, s>>>(
        d, static_cast<const float4*>(args->inputs[1].data), static_cast<float4*>(args->outputs[0].data), M4);
  } else {
    row_scale<<<dim3(static_cast<unsigned>((M + 255) / 256), static_cast<unsigned>(N)), 256, 0, s>>>(
        d, static_cast<const float*>(args->inputs[1].data), static_cast<float*>(args->outputs[0].data), M);
  }
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
