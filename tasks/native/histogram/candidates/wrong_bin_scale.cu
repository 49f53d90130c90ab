// expect: WRONG_ANSWER — bins with floor(x * 255) (off-by-one in the scale): bin edges shifted.
#include <crl/kernel.h>
#include <cuda_runtime.h>

#include <cstdint>

__global__ void histogram_255(const float* x, int* counts, int64_t N) {
  const int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (k >= N) return;
  const float v = x[k];
  if (v >= 0.0f && v < 1.0f) atomicAdd(&counts[static_cast<int>(v * 255.0f)], 1);
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0];
  cudaStream_t s = static_cast<cudaStream_t>(args->stream);
  int* counts = static_cast<int*>(args->outputs[0].data);
  cudaMemsetAsync(counts, 0, 256 * sizeof(int), s);
  histogram_255<<<static_cast<unsigned>((N + 255) / 256), 256, 0, s>>>(static_cast<const float*>(args->inputs[0].data),
                                                                       counts, N);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
