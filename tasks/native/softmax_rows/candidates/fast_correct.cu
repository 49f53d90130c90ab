// expect: OK — faster: one 256-thread block per row; online (max, sum) per thread merged with warp
// shuffles and shared memory, then one coalesced pass writing exp(x - m) / s.
#include <crl/kernel.h>
#include <cuda_runtime.h>

#include <cstdint>

__device__ __forceinline__ void merge(float& m, float& s, float m2, float s2) {
  const float M = fmaxf(m, m2);
  s = (m == -INFINITY ? 0.0f : s * __expf(m - M)) + (m2 == -INFINITY ? 0.0f : s2 * __expf(m2 - M));
  m = M;
}

__global__ void __launch_bounds__(256) softmax_block(const float* __restrict__ x, float* __restrict__ y, int64_t D) {
  const float* r = x + blockIdx.x * D;
  float* o = y + blockIdx.x * D;
  float m = -INFINITY, s = 0.0f;
  for (int64_t j = threadIdx.x; j < D; j += blockDim.x) {
    const float v = r[j];
    if (v > m) {
      s = s * __expf(m - v) + 1.0f;
      m = v;
    } else {
      s += __expf(v - m);
    }
  }
  for (int off = 16; off > 0; off >>= 1) {
    const float m2 = __shfl_xor_sync(0xffffffffu, m, off), s2 = __shfl_xor_sync(0xffffffffu, s, off);
    merge(m, s, m2, s2);
  }
  __shared__ float sm[8], ss[8];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  if (lane == 0) {
    sm[warp] = m;
    ss[warp] = s;
  }
  __syncthreads();
  if (warp == 0) {
    m = lane < 8 ? sm[lane] : -INFINITY;
    s = lane < 8 ? ss[lane] : 0.0f;
    for (int off = 4; off > 0; off >>= 1) {
      const float m2 = __shfl_xor_sync(0xffffffffu, m, off), s2 = __shfl_xor_sync(0xffffffffu, s, off);
      merge(m, s, m2, s2);
    }
    if (lane == 0) {
      sm[0] = m;
      ss[0] = s;
    }
  }
  __syncthreads();
  const float M = sm[0], inv = 1.0f / ss[0];
  for (int64_t j = threadIdx.x; j < D; j += blockDim.x) o[j] = __expf(r[j] - M) * inv;
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  softmax_block<<<static_cast<unsigned>(N), 256, 0, static_cast<cudaStream_t>(args->stream)>>>(
      static_cast<const float*>(args->inputs[0].data), static_cast<float*>(args->outputs[0].data), D);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
