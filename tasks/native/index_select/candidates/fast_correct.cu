// expect: OK — faster: one warp per output row, index wrapped once per row, 16-byte (int4) copies
// when rows are 16-byte aligned (D % 4 == 0), coalesced scalar copies otherwise.
#include <crl/kernel.h>
#include <cuda_runtime.h>

#include <cstdint>

template <bool kVec>
__global__ void gather_warp_rows(const int32_t* __restrict__ x, const int64_t* __restrict__ idx, int32_t* __restrict__ y,
                                 int64_t N, int64_t D, int64_t M) {
  const int64_t i = (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (i >= M) return;
  int64_t r = __ldg(&idx[i]) % N;
  if (r < 0) r += N;
  if (kVec) {
    const int4* src = reinterpret_cast<const int4*>(x + r * D);
    int4* dst = reinterpret_cast<int4*>(y + i * D);
    for (int64_t j = lane; j < D / 4; j += 32) dst[j] = __ldg(&src[j]);
  } else {
    for (int64_t j = lane; j < D; j += 32) y[i * D + j] = __ldg(&x[r * D + j]);
  }
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1], M = args->inputs[1].shape[0];
  const int32_t* x = static_cast<const int32_t*>(args->inputs[0].data);
  const int64_t* idx = static_cast<const int64_t*>(args->inputs[1].data);
  int32_t* y = static_cast<int32_t*>(args->outputs[0].data);
  cudaStream_t s = static_cast<cudaStream_t>(args->stream);
  const unsigned blocks = static_cast<unsigned>((M * 32 + 255) / 256);
  const bool vec = D % 4 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(y) % 16 == 0;
  if (vec) gather_warp_rows<true><<<blocks, 256, 0, s>>>(x, idx, y, N, D, M);
  else gather_warp_rows<false><<<blocks, 256, 0, s>>>(x, idx, y, N, D, M);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
