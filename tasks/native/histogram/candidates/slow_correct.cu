// expect: OK — correct but slow: one thread per bin scans the whole input (every thread reads every
// element), in 8 slices whose partial counts are added atomically.
#include <crl/kernel.h>
#include <cuda_runtime.h>

#include <cstdint>

__global__ void histogram_per_bin(const float* x, int* counts, int64_t N) {
  const int b = threadIdx.x;
  const float lo = b / 256.0f, hi = (b + 1) / 256.0f;
  const int64_t slice = (N + gridDim.x - 1) / gridDim.x;
  const int64_t k0 = blockIdx.x * slice, k1 = k0 + slice < N ? k0 + slice : N;
  int c = 0;
  for (int64_t k = k0; k < k1; ++k) c += (x[k] >= lo && x[k] < hi) ? 1 : 0;
  atomicAdd(&counts[b], c);
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0];
  cudaStream_t s = static_cast<cudaStream_t>(args->stream);
  int* counts = static_cast<int*>(args->outputs[0].data);
  cudaMemsetAsync(counts, 0, 256 * sizeof(int), s);
  histogram_per_bin<<<8, 256, 0, s>>>(static_cast<const float*>(args->inputs[0].data), counts, N);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
