// expect: OK — faster: privatised per-block histograms in shared memory (shared atomics), grid-stride
// float4 loads, then one global atomicAdd per bin per block.
#include <crl/kernel.h>
#include <cuda_runtime.h>

#include <cstdint>

__device__ __forceinline__ void count(int* h, float v) {
  if (v >= 0.0f && v < 1.0f) atomicAdd(&h[static_cast<int>(v * 256.0f)], 1);
}

__global__ void __launch_bounds__(512) histogram_shared(const float* __restrict__ x, int* __restrict__ counts, int64_t N) {
  __shared__ int h[256];
  for (int b = threadIdx.x; b < 256; b += blockDim.x) h[b] = 0;
  __syncthreads();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const bool aligned = reinterpret_cast<uintptr_t>(x) % 16 == 0;
  const int64_t n4 = aligned ? N / 4 : 0;
  const float4* x4 = reinterpret_cast<const float4*>(x);
  for (int64_t k = first; k < n4; k += stride) {
    const float4 v = x4[k];
    count(h, v.x);
    count(h, v.y);
    count(h, v.z);
    count(h, v.w);
  }
  for (int64_t k = 4 * n4 + first; k < N; k += stride) count(h, x[k]);
  __syncthreads();
  for (int b = threadIdx.x; b < 256; b += blockDim.x)
    if (h[b]) atomicAdd(&counts[b], h[b]);
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0];
  cudaStream_t s = static_cast<cudaStream_t>(args->stream);
  int* counts = static_cast<int*>(args->outputs[0].data);
  cudaMemsetAsync(counts, 0, 256 * sizeof(int), s);
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  const int64_t want = (N / 4 + 511) / 512;
  const int64_t cap = 4 * static_cast<int64_t>(sms > 0 ? sms : 132);
  const unsigned blocks = static_cast<unsigned>(want < 1 ? 1 : (want < cap ? want : cap));
  histogram_shared<<<blocks, 512, 0, s>>>(static_cast<const float*>(args->inputs[0].data), counts, N);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
