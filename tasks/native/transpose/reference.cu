// Reference (cuda): one thread per output element y[j, i] (coalesced writes, strided reads).
#include <crl/kernel.h>
#include <cuda_runtime.h>

#include <cstdint>

__global__ void transpose_ref(const float* x, float* y, int64_t N, int64_t D) {
  const int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (idx >= N * D) return;
  const int64_t j = idx / N, i = idx % N;
  y[idx] = x[i * D + j];
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  if (args->num_inputs != 1 || args->num_outputs != 1) return 1;
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  const int64_t n = N * D;
  transpose_ref<<<static_cast<unsigned>((n + 255) / 256), 256, 0, static_cast<cudaStream_t>(args->stream)>>>(
      static_cast<const float*>(args->inputs[0].data), static_cast<float*>(args->outputs[0].data), N, D);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
