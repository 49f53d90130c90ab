// expect: OK — correct but slow: one thread per row scanning it sequentially (uncoalesced across the
// warp), in 32-thread blocks.
#include <crl/kernel.h>
#include <cuda_runtime.h>

#include <cstdint>

__global__ void rowmin_relu_serial(const float* x, float* y, int64_t N, int64_t D) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= N) return;
  float m = x[i * D + D - 1];
  for (int64_t j = D - 2; j >= 0; --j) m = fminf(m, x[i * D + j]);
  y[i] = fmaxf(m, 0.0f);
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  rowmin_relu_serial<<<static_cast<unsigned>((N + 31) / 32), 32, 0, static_cast<cudaStream_t>(args->stream)>>>(
      static_cast<const float*>(args->inputs[0].data), static_cast<float*>(args->outputs[0].data), N, D);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
