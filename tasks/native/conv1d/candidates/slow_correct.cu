// expect: OK — correct but slow: one thread per (b, o) output row, sequential over t (uncoalesced).
#include <crl/kernel.h>
#include <cuda_runtime.h>

#include <cstdint>

__global__ void conv1d_row_thread(const float* x, const float* w, const float* bias, float* y, int64_t B, int64_t Cin,
                                  int64_t L, int64_t Cout, int64_t K) {
  const int64_t r = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (r >= B * Cout) return;
  const int64_t b = r / Cout, o = r % Cout, Lout = L - K + 1;
  for (int64_t t = 0; t < Lout; ++t) {
    float acc = bias[o];
    for (int64_t c = 0; c < Cin; ++c)
      for (int64_t k = 0; k < K; ++k) acc += w[(o * Cin + c) * K + k] * x[(b * Cin + c) * L + t + k];
    y[r * Lout + t] = acc;
  }
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t B = args->inputs[0].shape[0], Cin = args->inputs[0].shape[1], L = args->inputs[0].shape[2];
  const int64_t Cout = args->inputs[1].shape[0], K = args->inputs[1].shape[2];
  conv1d_row_thread<<<static_cast<unsigned>((B * Cout + 31) / 32), 32, 0, static_cast<cudaStream_t>(args->stream)>>>(
      static_cast<const float*>(args->inputs[0].data), static_cast<const float*>(args->inputs[1].data),
      static_cast<const float*>(args->inputs[2].data), static_cast<float*>(args->outputs[0].data), B, Cin, L, Cout,
      K);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
