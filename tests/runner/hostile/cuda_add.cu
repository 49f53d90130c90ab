// A correct CUDA candidate: y = a + b (float32), launched on args->stream.
#include "crl/kernel.h"

__global__ void AddKernel(const float* a, const float* b, float* y, int64_t n) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) y[i] = a[i] + b[i];
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  int64_t n = crl_numel(&args->outputs[0]);
  int threads = 256;
  int64_t blocks = (n + threads - 1) / threads;
  AddKernel<<<static_cast<unsigned>(blocks), threads, 0, static_cast<cudaStream_t>(args->stream)>>>(
      static_cast<const float*>(args->inputs[0].data),
      static_cast<const float*>(args->inputs[1].data), static_cast<float*>(args->outputs[0].data),
      n);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
