// expect: WRONG_ANSWER — computes in fp16 (__half inputs, fma and result): ~5e-4 relative error,
// which fp32's 1e-4 tolerance must reject.
#include <crl/kernel.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

__global__ void gelu_half(const float* x, const float* a, const float* b, float* y, int64_t n, int64_t D) {
  const int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (idx >= n) return;
  const int64_t j = idx % D;
  const __half z = __hfma(__float2half(a[j]), __float2half(x[idx]), __float2half(b[j]));
  const float zf = __half2float(z);
  y[idx] = __half2float(__float2half(0.5f * zf * (1.0f + erff(zf * 0.70710678f))));
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  const int64_t n = N * D;
  gelu_half<<<static_cast<unsigned>((n + 255) / 256), 256, 0, static_cast<cudaStream_t>(args->stream)>>>(
      static_cast<const float*>(args->inputs[0].data), static_cast<const float*>(args->inputs[1].data),
      static_cast<const float*>(args->inputs[2].data), static_cast<float*>(args->outputs[0].data), n, D);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
