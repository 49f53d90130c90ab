// expect: WRONG_ANSWER — broadcasts a and b along the wrong axis (indexes them by row, modulo D).
#include <crl/kernel.h>
#include <cuda_runtime.h>

#include <cstdint>

__global__ void gelu_bad_axis(const float* x, const float* a, const float* b, float* y, int64_t n, int64_t D) {
  const int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (idx >= n) return;
  const int64_t r = (idx / D) % D;
  const float z = a[r] * x[idx] + b[r];
  y[idx] = 0.5f * z * (1.0f + erff(z * 0.70710678f));
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  const int64_t n = N * D;
  gelu_bad_axis<<<static_cast<unsigned>((n + 255) / 256), 256, 0, static_cast<cudaStream_t>(args->stream)>>>(
      static_cast<const float*>(args->inputs[0].data), static_cast<const float*>(args->inputs[1].data),
      static_cast<const float*>(args->inputs[2].data), static_cast<float*>(args->outputs[0].data), n, D);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
