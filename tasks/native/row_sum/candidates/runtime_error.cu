// expect: RUNTIME_ERROR — launch with 2048 threads per block (over the 1024 limit): the launch fails
// and the candidate reports it through its return value.
#include <crl/kernel.h>
#include <cuda_runtime.h>

#include <cstdint>

__global__ void row_sum_bad_launch(const float* x, float* y, int64_t N, int64_t D) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= N) return;
  float acc = 0.0f;
  for (int64_t j = 0; j < D; ++j) acc += x[i * D + j];
  y[i] = acc;
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  row_sum_bad_launch<<<static_cast<unsigned>((N + 2047) / 2048), 2048, 0, static_cast<cudaStream_t>(args->stream)>>>(
      static_cast<const float*>(args->inputs[0].data), static_cast<float*>(args->outputs[0].data), N, D);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
