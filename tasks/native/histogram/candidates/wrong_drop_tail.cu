// expect: WRONG_ANSWER — launches N / 1024 full blocks of 1024 threads (rounded down): the last
// partial block of elements is never counted (right only when N % 1024 == 0).
#include <crl/kernel.h>
#include <cuda_runtime.h>

#include <cstdint>

__global__ void histogram_full_blocks(const float* x, int* counts) {
  const int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const float v = x[k];
  if (v >= 0.0f && v < 1.0f) atomicAdd(&counts[static_cast<int>(v * 256.0f)], 1);
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0];
  cudaStream_t s = static_cast<cudaStream_t>(args->stream);
  int* counts = static_cast<int*>(args->outputs[0].data);
  cudaMemsetAsync(counts, 0, 256 * sizeof(int), s);
  if (N / 1024 > 0)
    histogram_full_blocks<<<static_cast<unsigned>(N / 1024), 1024, 0, s>>>(static_cast<const float*>(args->inputs[0].data),
                                                                           counts);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
