// expect: WRONG_ANSWER — hard-codes the timed row width D = 256 (ignores shape[]; N and M derived from
// element counts): right on the timed size, wrong on the verify sizes.
#include <crl/kernel.h>
#include <cuda_runtime.h>

#include <cstdint>

constexpr int64_t kD = 256;

__global__ void gather_fixed(const int32_t* x, const int64_t* idx, int32_t* y, int64_t N, int64_t M) {
  const int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (k >= M * kD) return;
  const int64_t r = ((idx[k / kD] % N) + N) % N;
  y[k] = x[r * kD + k % kD];
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = crl_numel(&args->inputs[0]) / kD, M = crl_numel(&args->outputs[0]) / kD;
  if (N > 0 && M > 0)
    gather_fixed<<<static_cast<unsigned>((M * kD + 255) / 256), 256, 0, static_cast<cudaStream_t>(args->stream)>>>(
        static_cast<const int32_t*>(args->inputs[0].data), static_cast<const int64_t*>(args->inputs[1].data),
        static_cast<int32_t*>(args->outputs[0].data), N, M);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
