// expect: WRONG_ANSWER — float4-only loop silently drops the last D % 4 columns of every row.
#include <crl/kernel.h>
#include <cuda_runtime.h>

#include <cstdint>

__global__ void row_sum_vec_only(const float* __restrict__ x, float* __restrict__ y, int64_t D) {
  const float* r = x + blockIdx.x * D;
  float acc = 0.0f;
  for (int64_t j = 4 * threadIdx.x; j + 4 <= D; j += 4 * blockDim.x) acc += (r[j] + r[j + 1]) + (r[j + 2] + r[j + 3]);
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  __shared__ float part[8];
  if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    float s = 0.0f;
    for (int w = 0; w < 8; ++w) s += part[w];
    y[blockIdx.x] = s;
  }
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  row_sum_vec_only<<<static_cast<unsigned>(N), 256, 0, static_cast<cudaStream_t>(args->stream)>>>(
      static_cast<const float*>(args->inputs[0].data), static_cast<float*>(args->outputs[0].data), D);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
