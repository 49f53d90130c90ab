// expect: WRONG_ANSWER — normalises over columns (softmax along dim 0) instead of along rows.
#include <crl/kernel.h>
#include <cuda_runtime.h>

#include <cstdint>

__global__ void softmax_cols(const float* x, float* y, int64_t N, int64_t D) {
  const int64_t j = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (j >= D) return;
  float m = x[j];
  for (int64_t i = 1; i < N; ++i) m = fmaxf(m, x[i * D + j]);
  float s = 0.0f;
  for (int64_t i = 0; i < N; ++i) s += expf(x[i * D + j] - m);
  for (int64_t i = 0; i < N; ++i) y[i * D + j] = expf(x[i * D + j] - m) / s;
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  softmax_cols<<<static_cast<unsigned>((D + 127) / 128), 128, 0, static_cast<cudaStream_t>(args->stream)>>>(
      static_cast<const float*>(args->inputs[0].data), static_cast<float*>(args->outputs[0].data), N, D);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
