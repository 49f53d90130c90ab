// Reference (cuda): one thread per output element; each thread recomputes its row's max and sum.
#include <crl/kernel.h>
#include <cuda_runtime.h>

#include <cstdint>

__global__ void softmax_ref(const float* x, float* y, int64_t N, int64_t D) {
  const int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (idx >= N * D) return;
  const float* r = x + (idx / D) * D;
  float m = r[0];
  for (int64_t k = 1; k < D; ++k) m = fmaxf(m, r[k]);
  float sum = 0.0f;
  for (int64_t k = 0; k < D; ++k) sum += expf(r[k] - m);
  y[idx] = expf(x[idx] - m) / sum;
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  if (args->num_inputs != 1 || args->num_outputs != 1) return 1;
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  const int64_t n = N * D;
  softmax_ref<<<static_cast<unsigned>((n + 255) / 256), 256, 0, static_cast<cudaStream_t>(args->stream)>>>(
      static_cast<const float*>(args->inputs[0].data), static_cast<float*>(args->outputs[0].data), N, D);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
