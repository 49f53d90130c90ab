// expect: WRONG_ANSWER — splits each row over 8 blocks and accumulates into y[i] with a plain
// (non-atomic) read-modify-write: a data race that loses updates non-deterministically.
#include <crl/kernel.h>
#include <cuda_runtime.h>

#include <cstdint>

__global__ void zero(float* y, int64_t N) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < N) y[i] = 0.0f;
}

// grid = (kSplit, N): consecutive blocks work on the same row and run concurrently.
constexpr int kSplit = 8;
__global__ void racy_row_sum(const float* __restrict__ x, float* y, int64_t D) {
  const int64_t row = blockIdx.y;
  __shared__ float seen;
  if (threadIdx.x == 0) seen = *reinterpret_cast<volatile float*>(&y[row]);  // read early ...
  const int64_t chunk = (D + kSplit - 1) / kSplit;
  const int64_t lo = blockIdx.x * chunk, hi = lo + chunk < D ? lo + chunk : D;
  float acc = 0.0f;
  for (int64_t j = lo + threadIdx.x; j < hi; j += blockDim.x) acc += x[row * D + j];
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  __shared__ float part[8];
  if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    float s = seen;
    for (int w = 0; w < 8; ++w) s += part[w];
    *reinterpret_cast<volatile float*>(&y[row]) = s;  // ... write late: concurrent blocks overwrite each other
  }
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  float* y = static_cast<float*>(args->outputs[0].data);
  cudaStream_t s = static_cast<cudaStream_t>(args->stream);
  zero<<<static_cast<unsigned>((N + 255) / 256), 256, 0, s>>>(y, N);
  racy_row_sum<<<dim3(kSplit, static_cast<unsigned>(N)), 256, 0, s>>>(static_cast<const float*>(args->inputs[0].data), y, D);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
