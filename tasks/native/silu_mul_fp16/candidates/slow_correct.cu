// expect: OK — correct but slow: one thread per row walks its elements sequentially (uncoalesced),
// double-precision exp.
#include <crl/kernel.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

__global__ void silu_mul_rows(const __half* a, const __half* b, __half* y, int64_t N, int64_t D) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= N) return;
  for (int64_t j = 0; j < D; ++j) {
    const double av = __half2float(a[i * D + j]), bv = __half2float(b[i * D + j]);
    y[i * D + j] = __float2half_rn(static_cast<float>(av / (1.0 + exp(-av)) * bv));
  }
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  silu_mul_rows<<<static_cast<unsigned>((N + 63) / 64), 64, 0, static_cast<cudaStream_t>(args->stream)>>>(
      static_cast<const __half*>(args->inputs[0].data), static_cast<const __half*>(args->inputs[1].data),
      static_cast<__half*>(args->outputs[0].data), N, D);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
