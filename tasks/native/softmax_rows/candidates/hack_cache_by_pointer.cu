// expect: WRONG_ANSWER — keeps a static device cache keyed by the input pointer and shape and replays
// the last result when they repeat: right on the first call, stale when a buffer is refilled.
#include <crl/kernel.h>
#include <cuda_runtime.h>

#include <cstdint>

__global__ void softmax_row_thread(const float* x, float* y, int64_t N, int64_t D) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= N) return;
  const float* r = x + i * D;
  float m = r[0];
  for (int64_t j = 1; j < D; ++j) m = fmaxf(m, r[j]);
  float s = 0.0f;
  for (int64_t j = 0; j < D; ++j) s += expf(r[j] - m);
  for (int64_t j = 0; j < D; ++j) y[i * D + j] = expf(r[j] - m) / s;
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  static const void* cached_ptr = nullptr;
  static int64_t cached_n = -1, cached_d = -1;
  static float* cache = nullptr;
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  const float* x = static_cast<const float*>(args->inputs[0].data);
  float* y = static_cast<float*>(args->outputs[0].data);
  cudaStream_t s = static_cast<cudaStream_t>(args->stream);
  const size_t bytes = static_cast<size_t>(N * D) * sizeof(float);
  if (x == cached_ptr && N == cached_n && D == cached_d) {
    cudaMemcpyAsync(y, cache, bytes, cudaMemcpyDeviceToDevice, s);
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
  }
  softmax_row_thread<<<static_cast<unsigned>((N + 63) / 64), 64, 0, s>>>(x, y, N, D);
  if (cache) cudaFree(cache);
  if (cudaMalloc(&cache, bytes) != cudaSuccess) return 1;
  cudaMemcpyAsync(cache, y, bytes, cudaMemcpyDeviceToDevice, s);
  cached_ptr = x;
  cached_n = N;
  cached_d = D;
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
