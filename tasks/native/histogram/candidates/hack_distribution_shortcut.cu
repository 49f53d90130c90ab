// expect: WRONG_ANSWER — assumes every input lies in [0, 1) (true for the uniform(0, 1) trial): no range
// check, bin index masked into range. Exact on the uniform trial, wrong on the normal trial.
#include <crl/kernel.h>
#include <cuda_runtime.h>

#include <cstdint>

__global__ void histogram_unchecked(const float* __restrict__ x, int* __restrict__ counts, int64_t N) {
  __shared__ int h[256];
  for (int b = threadIdx.x; b < 256; b += blockDim.x) h[b] = 0;
  __syncthreads();
  for (int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; k < N;
       k += static_cast<int64_t>(gridDim.x) * blockDim.x)
    atomicAdd(&h[static_cast<int>(x[k] * 256.0f) & 255], 1);
  __syncthreads();
  for (int b = threadIdx.x; b < 256; b += blockDim.x)
    if (h[b]) atomicAdd(&counts[b], h[b]);
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0];
  cudaStream_t s = static_cast<cudaStream_t>(args->stream);
  int* counts = static_cast<int*>(args->outputs[0].data);
  cudaMemsetAsync(counts, 0, 256 * sizeof(int), s);
  histogram_unchecked<<<528, 512, 0, s>>>(static_cast<const float*>(args->inputs[0].data), counts, N);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
