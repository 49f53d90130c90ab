// expect: OK — correct but slow: one thread per row, sequential two-pass statistics (uncoalesced).
#include <crl/kernel.h>
#include <cuda_runtime.h>

#include <cstdint>

__global__ void layernorm_row_thread(const float* x, const float* gamma, const float* beta, float* y, int64_t N,
                                     int64_t D, float eps) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= N) return;
  const float* r = x + i * D;
  float mean = 0.0f;
  for (int64_t j = 0; j < D; ++j) mean += r[j];
  mean /= static_cast<float>(D);
  float var = 0.0f;
  for (int64_t j = 0; j < D; ++j) var += (r[j] - mean) * (r[j] - mean);
  const float inv = rsqrtf(var / static_cast<float>(D) + eps);
  for (int64_t j = 0; j < D; ++j) y[i * D + j] = (r[j] - mean) * inv * gamma[j] + beta[j];
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  layernorm_row_thread<<<static_cast<unsigned>((N + 63) / 64), 64, 0, static_cast<cudaStream_t>(args->stream)>>>(
      static_cast<const float*>(args->inputs[0].data), static_cast<const float*>(args->inputs[1].data),
      static_cast<const float*>(args->inputs[2].data), static_cast<float*>(args->outputs[0].data), N, D,
      static_cast<float>(args->scalars[0]));
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
