// Reference (cuda): one thread per element, exact erf GELU evaluated in double.
#include <crl/kernel.h>
#include <cuda_runtime.h>

#include <cstdint>

__global__ void gelu_affine_ref(const float* x, const float* a, const float* b, float* y,
                                int64_t n, int64_t D) {
  const int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (idx >= n) return;
  const int64_t j = idx % D;
  const double z = static_cast<double>(a[j]) * x[idx] + b[j];
  y[idx] = static_cast<float>(0.5 * z * (1.0 + erf(z * 0.70710678118654752440)));
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  if (args->num_inputs != 3 || args->num_outputs != 1) return 1;
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  const int64_t n = N * D;
  cudaStream_t stream = static_cast<cudaStream_t>(args->stream);
  const unsigned blocks = static_cast<unsigned>((n + 255) / 256);
  gelu_affine_ref<<<blocks, 256, 0, stream>>>(
      static_cast<const float*>(args->inputs[0].data), static_cast<const float*>(args->inputs[1].data),
      static_cast<const float*>(args->inputs[2].data), static_cast<float*>(args->outputs[0].data), n, D);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
