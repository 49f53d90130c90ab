// expect: WRONG_ANSWER — clamps out-of-range indices to [0, N-1] instead of wrapping them.
#include <crl/kernel.h>
#include <cuda_runtime.h>

#include <cstdint>

__global__ void gather_clamped(const int32_t* x, const int64_t* idx, int32_t* y, int64_t N, int64_t D, int64_t M) {
  const int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (k >= M * D) return;
  const int64_t v = idx[k / D];
  const int64_t r = v < 0 ? 0 : (v >= N ? N - 1 : v);
  y[k] = x[r * D + k % D];
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1], M = args->inputs[1].shape[0];
  const int64_t n = M * D;
  gather_clamped<<<static_cast<unsigned>((n + 255) / 256), 256, 0, static_cast<cudaStream_t>(args->stream)>>>(
      static_cast<const int32_t*>(args->inputs[0].data), static_cast<const int64_t*>(args->inputs[1].data),
      static_cast<int32_t*>(args->outputs[0].data), N, D, M);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
