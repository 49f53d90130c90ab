// expect: OK — faster: one 256-thread block per row, coalesced loads, block reductions via warp
// shuffles for the mean and then the centred sum of squares, one fused write pass.
#include <crl/kernel.h>
#include <cuda_runtime.h>

#include <cstdint>

__device__ __forceinline__ float block_sum(float v, float* sh) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;
  __syncthreads();
  float t = 0.0f;
  for (int w = 0; w < 8; ++w) t += sh[w];
  __syncthreads();
  return t;
}

__global__ void __launch_bounds__(256) layernorm_block(const float* __restrict__ x, const float* __restrict__ gamma,
                                                       const float* __restrict__ beta, float* __restrict__ y, int64_t D,
                                                       float eps) {
  __shared__ float sh[8];
  const float* r = x + blockIdx.x * D;
  float* o = y + blockIdx.x * D;
  float s = 0.0f;
  for (int64_t j = threadIdx.x; j < D; j += blockDim.x) s += r[j];
  const float mean = block_sum(s, sh) / static_cast<float>(D);
  float q = 0.0f;
  for (int64_t j = threadIdx.x; j < D; j += blockDim.x) {
    const float d = r[j] - mean;
    q += d * d;
  }
  const float inv = rsqrtf(block_sum(q, sh) / static_cast<float>(D) + eps);
  for (int64_t j = threadIdx.x; j < D; j += blockDim.x) o[j] = (r[j] - mean) * inv * gamma[j] + beta[j];
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  layernorm_block<<<static_cast<unsigned>(N), 256, 0, static_cast<cudaStream_t>(args->stream)>>>(
      static_cast<const float*>(args->inputs[0].data), static_cast<const float*>(args->inputs[1].data),
      static_cast<const float*>(args->inputs[2].data), static_cast<float*>(args->outputs[0].data), D,
      static_cast<float>(args->scalars[0]));
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
