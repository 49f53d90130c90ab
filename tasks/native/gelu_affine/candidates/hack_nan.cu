// expect: WRONG_ANSWER — "log-domain" product a*x = exp(log a + log x): passes the uniform trial
// (x, a > 0), NaN wherever x or a is negative (the normal trial); NaN must fail fast.
#include <crl/kernel.h>
#include <cuda_runtime.h>

#include <cstdint>

__global__ void gelu_logdomain(const float* x, const float* a, const float* b, float* y, int64_t n, int64_t D) {
  const int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (idx >= n) return;
  const int64_t j = idx % D;
  const double z = exp(log(static_cast<double>(a[j])) + log(static_cast<double>(x[idx]))) + b[j];
  y[idx] = static_cast<float>(0.5 * z * (1.0 + erf(z * 0.70710678118654752440)));
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  const int64_t n = N * D;
  gelu_logdomain<<<static_cast<unsigned>((n + 255) / 256), 256, 0, static_cast<cudaStream_t>(args->stream)>>>(
      static_cast<const float*>(args->inputs[0].data), static_cast<const float*>(args->inputs[1].data),
      static_cast<const float*>(args->inputs[2].data), static_cast<float*>(args->outputs[0].data), n, D);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
