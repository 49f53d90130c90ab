// expect: OK — correct but slow: one thread per output, full k loop with a (k == i) select instead
// of a materialised diag matrix.
#include <crl/kernel.h>
#include <cuda_runtime.h>

#include <cstdint>

__global__ void diag_mm_select(const float* d, const float* B, float* C, int64_t N, int64_t M) {
  const int64_t j = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t i = blockIdx.y;
  if (j >= M) return;
  float acc = 0.0f;
  for (int64_t k = 0; k < N; ++k) acc += (k == i ? d[k] : 0.0f) * B[k * M + j];
  C[i * M + j] = acc;
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[1].shape[0], M = args->inputs[1].shape[1];
  dim3 grid(static_cast<unsigned>((M + 127) / 128), static_cast<unsigned>(N));
  diag_mm_select<<<grid, 128, 0, static_cast<cudaStream_t>(args->stream)>>>(
      static_cast<const float*>(args->inputs[0].data), static_cast<const float*>(args->inputs[1].data),
      static_cast<float*>(args->outputs[0].data), N, M);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
