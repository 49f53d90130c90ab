// expect: OK (flag: stream_gap) — launches the real work on its own non-blocking stream and returns:
// the output is right once the whole device is synchronised, but events recorded on args->stream
// measure almost nothing. The harness must time device-wide and flag the event/device-time gap.
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
  static cudaStream_t side = nullptr;
  if (!side && cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) != cudaSuccess) return 1;
  const int64_t N = args->inputs[1].shape[0], M = args->inputs[1].shape[1];
  dim3 grid(static_cast<unsigned>((M + 127) / 128), static_cast<unsigned>(N));
  diag_mm_select<<<grid, 128, 0, side>>>(static_cast<const float*>(args->inputs[0].data),
                                         static_cast<const float*>(args->inputs[1].data),
                                         static_cast<float*>(args->outputs[0].data), N, M);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
