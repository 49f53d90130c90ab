// expect: WRONG_ANSWER — uses the tanh approximation of GELU (off by up to ~5e-4 from the erf form).
#include <crl/kernel.h>
#include <cuda_runtime.h>

#include <cstdint>

__global__ void gelu_tanh(const float* x, const float* a, const float* b, float* y, int64_t n, int64_t D) {
  const int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (idx >= n) return;
  const int64_t j = idx % D;
  const float z = a[j] * x[idx] + b[j];
  y[idx] = 0.5f * z * (1.0f + tanhf(0.7978845608f * (z + 0.044715f * z * z * z)));
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  const int64_t n = N * D;
  gelu_tanh<<<static_cast<unsigned>((n + 255) / 256), 256, 0, static_cast<cudaStream_t>(args->stream)>>>(
      static_cast<const float*>(args->inputs[0].data), static_cast<const float*>(args->inputs[1].data),
      static_cast<const float*>(args->inputs[2].data), static_cast<float*>(args->outputs[0].data), n, D);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
