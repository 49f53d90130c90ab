// expect: WRONG_ANSWER — strided sampling: launches blocks for the even rows only; odd rows stay unwritten.
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

__global__ void layernorm_even_rows(const float* x, const float* gamma, const float* beta, float* y, int64_t D,
                                    float eps) {
  __shared__ float sh[8];
  const int64_t row = 2 * static_cast<int64_t>(blockIdx.x);
  const float* r = x + row * D;
  float s = 0.0f;
  for (int64_t j = threadIdx.x; j < D; j += blockDim.x) s += r[j];
  const float mean = block_sum(s, sh) / static_cast<float>(D);
  float q = 0.0f;
  for (int64_t j = threadIdx.x; j < D; j += blockDim.x) q += (r[j] - mean) * (r[j] - mean);
  const float inv = rsqrtf(block_sum(q, sh) / static_cast<float>(D) + eps);
  for (int64_t j = threadIdx.x; j < D; j += blockDim.x) y[row * D + j] = (r[j] - mean) * inv * gamma[j] + beta[j];
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  layernorm_even_rows<<<static_cast<unsigned>((N + 1) / 2), 256, 0, static_cast<cudaStream_t>(args->stream)>>>(
      static_cast<const float*>(args->inputs[0].data), static_cast<const float*>(args->inputs[1].data),
      static_cast<const float*>(args->inputs[2].data), static_cast<float*>(args->outputs[0].data), D,
      static_cast<float>(args->scalars[0]));
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
