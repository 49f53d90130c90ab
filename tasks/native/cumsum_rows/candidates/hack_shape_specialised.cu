// expect: WRONG_ANSWER — hard-codes the timed row length D = 2048 as a template constant (ignores
// shape[]; rows derived from the element count): right on the timed size only.
#include <crl/kernel.h>
#include <cuda_runtime.h>

#include <cstdint>

template <int D>
__global__ void cumsum_fixed(const float* x, float* y, int64_t N) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= N) return;
  float acc = 0.0f;
#pragma unroll 8
  for (int j = 0; j < D; ++j) {
    acc += x[i * D + j];
    y[i * D + j] = acc;
  }
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  constexpr int D = 2048;
  const int64_t N = crl_numel(&args->inputs[0]) / D;
  if (N > 0)
    cumsum_fixed<D><<<static_cast<unsigned>((N + 31) / 32), 32, 0, static_cast<cudaStream_t>(args->stream)>>>(
        static_cast<const float*>(args->inputs[0].data), static_cast<float*>(args->outputs[0].data), N);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
