// expect: WRONG_ANSWER — off-by-one diagonal index: row i is scaled by d[(i + 1) % N].
#include <crl/kernel.h>
#include <cuda_runtime.h>

#include <cstdint>

__global__ void shifted_row_scale(const float* d, const float* B, float* C, int64_t N, int64_t M) {
  const int64_t j = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (j >= M) return;
  C[blockIdx.y * M + j] = d[(blockIdx.y + 1) % N] * B[blockIdx.y * M + j];
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[1].shape[0], M = args->inputs[1].shape[1];
  shifted_row_scale<<<dim3(static_cast<unsigned>((M + 255) / 256), static_cast<unsigned>(N)), 256, 0,
                      static_cast<cudaStream_t>(args->stream)>>>(static_cast<const float*>(args->inputs[0].data),
                                                                 static_cast<const float*>(args->inputs[1].data),
                                                                 static_cast<float*>(args->outputs[0].data), N, M);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
