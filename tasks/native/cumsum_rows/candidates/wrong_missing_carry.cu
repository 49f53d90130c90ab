// expect: WRONG_ANSWER — block scan over chunks of 1024 that forgets to carry the running total from
// one chunk to the next: right only while D <= 1024, wrong on the timed size and on D = 4099.
#include <crl/kernel.h>
#include <cuda_runtime.h>

#include <cstdint>

constexpr int THREADS = 1024;

__global__ void cumsum_no_carry(const float* __restrict__ x, float* __restrict__ y, int64_t D) {
  __shared__ float buf[THREADS];
  const float* r = x + blockIdx.x * D;
  float* o = y + blockIdx.x * D;
  for (int64_t c0 = 0; c0 < D; c0 += THREADS) {
    const int64_t k = c0 + threadIdx.x;
    buf[threadIdx.x] = k < D ? r[k] : 0.0f;
    __syncthreads();
    for (int off = 1; off < THREADS; off <<= 1) {  // Hillis-Steele
      const float add = threadIdx.x >= off ? buf[threadIdx.x - off] : 0.0f;
      __syncthreads();
      buf[threadIdx.x] += add;
      __syncthreads();
    }
    if (k < D) o[k] = buf[threadIdx.x];  // missing: + total of the previous chunks
    __syncthreads();
  }
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  cumsum_no_carry<<<static_cast<unsigned>(N), THREADS, 0, static_cast<cudaStream_t>(args->stream)>>>(
      static_cast<const float*>(args->inputs[0].data), static_cast<float*>(args->outputs[0].data), D);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
