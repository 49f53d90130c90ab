// expect: WRONG_ANSWER — scales B in place (input used as scratch), then copies it to C: C is right,
// B is modified.
#include <crl/kernel.h>
#include <cuda_runtime.h>

#include <cstdint>

__global__ void scale_in_place(const float* d, float* B, int64_t M) {
  const int64_t j = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (j >= M) return;
  B[blockIdx.y * M + j] *= d[blockIdx.y];
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[1].shape[0], M = args->inputs[1].shape[1];
  cudaStream_t s = static_cast<cudaStream_t>(args->stream);
  float* B = static_cast<float*>(args->inputs[1].data);
  scale_in_place<<<dim3(static_cast<unsigned>((M + 255) / 256), static_cast<unsigned>(N)), 256, 0, s>>>(
      static_cast<const float*>(args->inputs[0].data), B, M);
  cudaMemcpyAsync(args->outputs[0].data, B, static_cast<size_t>(N * M) * sizeof(float), cudaMemcpyDeviceToDevice, s);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
