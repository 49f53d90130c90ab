// expect: OK — correct but slow: one thread per row, float accumulation, uncoalesced reads.
#include <crl/kernel.h>
#include <cuda_runtime.h>

#include <cstdint>

__global__ void row_sum_serial(const float* x, float* y, int64_t N, int64_t D) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= N) return;
  float acc = 0.0f;
  for (int64_t j = 0; j < D; ++j) acc += x[i * D + j];
  y[i] = acc;
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  row_sum_serial<<<static_cast<unsigned>((N + 63) / 64), 64, 0, static_cast<cudaStream_t>(args->stream)>>>(
      static_cast<const float*>(args->inputs[0].data), static_cast<float*>(args->outputs[0].data), N, D);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
