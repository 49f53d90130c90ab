// expect: OK — faster: one warp per row, coalesced loads, warp-shuffle min reduction, then ReLU.
// Still reads every element (computes the function rather than exploiting the degeneracy).
#include <crl/kernel.h>
#include <cuda_runtime.h>

#include <cstdint>

__global__ void rowmin_relu_warp(const float* __restrict__ x, float* __restrict__ y, int64_t N, int64_t D) {
  const int64_t i = (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (i >= N) return;
  const float* r = x + i * D;
  float m = INFINITY;
  for (int64_t j = lane; j < D; j += 32) m = fminf(m, r[j]);
  for (int o = 16; o > 0; o >>= 1) m = fminf(m, __shfl_xor_sync(0xffffffffu, m, o));
  if (lane == 0) y[i] = fmaxf(m, 0.0f);
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  rowmin_relu_warp<<<static_cast<unsigned>((N * 32 + 255) / 256), 256, 0, static_cast<cudaStream_t>(args->stream)>>>(
      static_cast<const float*>(args->inputs[0].data), static_cast<float*>(args->outputs[0].data), N, D);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
