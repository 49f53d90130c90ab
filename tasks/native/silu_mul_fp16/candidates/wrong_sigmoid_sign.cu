// expect: WRONG_ANSWER — sign slip in the gate: uses a * sigmoid(-a) instead of a * sigmoid(a).
#include <crl/kernel.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

__global__ void silu_mul_kernel(const __half* a, const __half* b, __half* y, int64_t n) {
  const int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (k >= n) return;
  const float av = __half2float(a[k]), bv = __half2float(b[k]);
  y[k] = __float2half_rn(av / (1.0f + expf(av)) * bv);
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t n = crl_numel(&args->inputs[0]);
  silu_mul_kernel<<<static_cast<unsigned>((n + 255) / 256), 256, 0, static_cast<cudaStream_t>(args->stream)>>>(
      static_cast<const __half*>(args->inputs[0].data), static_cast<const __half*>(args->inputs[1].data),
      static_cast<__half*>(args->outputs[0].data), n);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
