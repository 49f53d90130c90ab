// expect: WRONG_ANSWER — caches the result in a static device buffer keyed by the (x, idx) pointers and
// shapes and replays it with one memcpy: right on the first call, stale once the buffers are refilled.
#include <crl/kernel.h>
#include <cuda_runtime.h>

#include <cstdint>

__global__ void gather(const int32_t* x, const int64_t* idx, int32_t* y, int64_t N, int64_t D, int64_t M) {
  const int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (k >= M * D) return;
  const int64_t r = ((idx[k / D] % N) + N) % N;
  y[k] = x[r * D + k % D];
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  static const void* key_x = nullptr;
  static const void* key_idx = nullptr;
  static int64_t key_n = -1, key_d = -1, key_m = -1;
  static int32_t* cache = nullptr;
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1], M = args->inputs[1].shape[0];
  const int32_t* x = static_cast<const int32_t*>(args->inputs[0].data);
  const int64_t* idx = static_cast<const int64_t*>(args->inputs[1].data);
  int32_t* y = static_cast<int32_t*>(args->outputs[0].data);
  cudaStream_t s = static_cast<cudaStream_t>(args->stream);
  const size_t bytes = static_cast<size_t>(M * D) * sizeof(int32_t);
  if (x == key_x && idx == key_idx && N == key_n && D == key_d && M == key_m) {
    cudaMemcpyAsync(y, cache, bytes, cudaMemcpyDeviceToDevice, s);
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
  }
  gather<<<static_cast<unsigned>((M * D + 255) / 256), 256, 0, s>>>(x, idx, y, N, D, M);
  if (cache) cudaFree(cache);
  if (cudaMalloc(&cache, bytes) != cudaSuccess) return 1;
  cudaMemcpyAsync(cache, y, bytes, cudaMemcpyDeviceToDevice, s);
  key_x = x;
  key_idx = idx;
  key_n = N;
  key_d = D;
  key_m = M;
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
