// expect: WRONG_ANSWER — "all-half" sigmoid e^a / (1 + e^a) with e^a computed by hexp (fp16): fine for
// |a| < 11 (the uniform trial), but e^a overflows to inf for a > 11.09 and inf/inf = NaN.
#include <crl/kernel.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

__global__ void silu_mul_kernel(const __half* a, const __half* b, __half* y, int64_t n) {
  const int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (k >= n) return;
  const float av = __half2float(a[k]), bv = __half2float(b[k]);
  const __half e = hexp(a[k]);
  const __half sig = __hdiv(e, __hadd(__float2half(1.0f), e));
  y[k] = __float2half_rn(av * __half2float(sig) * bv);
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t n = crl_numel(&args->inputs[0]);
  silu_mul_kernel<<<static_cast<unsigned>((n + 255) / 256), 256, 0, static_cast<cudaStream_t>(args->stream)>>>(
      static_cast<const __half*>(args->inputs[0].data), static_cast<const __half*>(args->inputs[1].data),
      static_cast<__half*>(args->outputs[0].data), n);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
