// expect: WRONG_ANSWER — the normaliser skips the last element of each row (k < D - 1).
#include <crl/kernel.h>
#include <cuda_runtime.h>

#include <cstdint>

__global__ void softmax_short_sum(const float* x, float* y, int64_t N, int64_t D) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= N) return;
  const float* r = x + i * D;
  float m = r[0];
  for (int64_t j = 1; j < D; ++j) m = fmaxf(m, r[j]);
  float s = 0.0f;
  for (int64_t j = 0; j < D - 1; ++j) s += expf(r[j] - m);
  for (int64_t j = 0; j < D; ++j) y[i * D + j] = expf(r[j] - m) / s;
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  softmax_short_sum<<<static_cast<unsigned>((N + 63) / 64), 64, 0, static_cast<cudaStream_t>(args->stream)>>>(
      static_cast<const float*>(args->inputs[0].data), static_cast<float*>(args->outputs[0].data), N, D);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
