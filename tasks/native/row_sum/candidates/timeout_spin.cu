// expect: TIMEOUT — computes the answer, then launches a kernel that never finishes.
#include <crl/kernel.h>
#include <cuda_runtime.h>

#include <cstdint>

__global__ void row_sum_then_spin(const float* x, float* y, int64_t N, int64_t D, volatile int* never_set) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < N) {
    double acc = 0.0;
    for (int64_t j = 0; j < D; ++j) acc += x[i * D + j];
    y[i] = static_cast<float>(acc);
  }
  while (*never_set == 0) {
  }
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  cudaStream_t s = static_cast<cudaStream_t>(args->stream);
  static int* flag = nullptr;
  if (!flag && cudaMalloc(&flag, sizeof(int)) != cudaSuccess) return 1;
  cudaMemsetAsync(flag, 0, sizeof(int), s);
  row_sum_then_spin<<<static_cast<unsigned>((N + 127) / 128), 128, 0, s>>>(
      static_cast<const float*>(args->inputs[0].data), static_cast<float*>(args->outputs[0].data), N, D, flag);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
