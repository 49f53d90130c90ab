// expect: WRONG_ANSWER — writes only the even rows of y (strided sampling); the rest keeps the poison.
#include <crl/kernel.h>
#include <cuda_runtime.h>

#include <cstdint>

__global__ void transpose_even_rows(const float* x, float* y, int64_t N, int64_t D) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t j = 2 * static_cast<int64_t>(blockIdx.y);
  if (i >= N || j >= D) return;
  y[j * N + i] = x[i * D + j];
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  dim3 grid(static_cast<unsigned>((N + 255) / 256), static_cast<unsigned>((D + 1) / 2));
  transpose_even_rows<<<grid, 256, 0, static_cast<cudaStream_t>(args->stream)>>>(
      static_cast<const float*>(args->inputs[0].data), static_cast<float*>(args->outputs[0].data), N, D);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
