// expect: OK — correct but slow: one thread per row walks its columns (uncoalesced), double erf.
#include <crl/kernel.h>
#include <cuda_runtime.h>

#include <cstdint>

__global__ void gelu_rows(const float* x, const float* a, const float* b, float* y, int64_t N, int64_t D) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= N) return;
  for (int64_t j = 0; j < D; ++j) {
    const double z = static_cast<double>(a[j]) * x[i * D + j] + b[j];
    y[i * D + j] = static_cast<float>(0.5 * z * (1.0 + erf(z * 0.70710678118654752440)));
  }
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  gelu_rows<<<static_cast<unsigned>((N + 127) / 128), 128, 0, static_cast<cudaStream_t>(args->stream)>>>(
      static_cast<const float*>(args->inputs[0].data), static_cast<const float*>(args->inputs[1].data),
      static_cast<const float*>(args->inputs[2].data), static_cast<float*>(args->outputs[0].data), N, D);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
