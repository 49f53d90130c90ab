// expect: WRONG_ANSWER — computes the row mean instead of the row sum.
#include <crl/kernel.h>
#include <cuda_runtime.h>

#include <cstdint>

__global__ void row_mean(const float* x, float* y, int64_t N, int64_t D) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= N) return;
  double acc = 0.0;
  for (int64_t j = 0; j < D; ++j) acc += x[i * D + j];
  y[i] = static_cast<float>(acc / static_cast<double>(D));
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  row_mean<<<static_cast<unsigned>((N + 127) / 128), 128, 0, static_cast<cudaStream_t>(args->stream)>>>(
      static_cast<const float*>(args->inputs[0].data), static_cast<float*>(args->outputs[0].data), N, D);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
