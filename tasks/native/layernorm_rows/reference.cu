// Reference (cuda): one thread per output element; each thread recomputes its row's mean and variance.
#include <crl/kernel.h>
#include <cuda_runtime.h>

#include <cstdint>

__global__ void layernorm_ref(const float* x, const float* gamma, const float* beta, float* y, int64_t N, int64_t D,
                              float eps) {
  const int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (idx >= N * D) return;
  const int64_t j = idx % D;
  const float* r = x + (idx / D) * D;
  float mean = 0.0f;
  for (int64_t k = 0; k < D; ++k) mean += r[k];
  mean /= static_cast<float>(D);
  float var = 0.0f;
  for (int64_t k = 0; k < D; ++k) var += (r[k] - mean) * (r[k] - mean);
  var /= static_cast<float>(D);
  y[idx] = (x[idx] - mean) / sqrtf(var + eps) * gamma[j] + beta[j];
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  if (args->num_inputs != 3 || args->num_outputs != 1 || args->num_scalars != 1) return 1;
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  const int64_t n = N * D;
  layernorm_ref<<<static_cast<unsigned>((n + 255) / 256), 256, 0, static_cast<cudaStream_t>(args->stream)>>>(
      static_cast<const float*>(args->inputs[0].data), static_cast<const float*>(args->inputs[1].data),
      static_cast<const float*>(args->inputs[2].data), static_cast<float*>(args->outputs[0].data), N, D,
      static_cast<float>(args->scalars[0]));
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
