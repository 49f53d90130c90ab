// expect: OK — correct but slow: one thread per output row copies it element by element (uncoalesced).
#include <crl/kernel.h>
#include <cuda_runtime.h>

#include <cstdint>

__global__ void gather_row_thread(const int32_t* x, const int64_t* idx, int32_t* y, int64_t N, int64_t D, int64_t M) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= M) return;
  int64_t r = idx[i] % N;
  if (r < 0) r += N;
  for (int64_t j = 0; j < D; ++j) y[i * D + j] = x[r * D + j];
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1], M = args->inputs[1].shape[0];
  gather_row_thread<<<static_cast<unsigned>((M + 127) / 128), 128, 0, static_cast<cudaStream_t>(args->stream)>>>(
      static_cast<const int32_t*>(args->inputs[0].data), static_cast<const int64_t*>(args->inputs[1].data),
      static_cast<int32_t*>(args->outputs[0].data), N, D, M);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
