// expect: WRONG_ANSWER — off-by-one in the channel loop (c < Cin - 1): the last input channel is ignored.
#include <crl/kernel.h>
#include <cuda_runtime.h>

#include <cstdint>

__global__ void conv2d_short(const float* x, const float* w, const float* bias, float* y, int64_t B, int64_t Cin,
                             int64_t H, int64_t W, int64_t Cout, int64_t KH, int64_t KW) {
  const int64_t OH = H - KH + 1, OW = W - KW + 1;
  const int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (idx >= B * Cout * OH * OW) return;
  const int64_t j = idx % OW, i = (idx / OW) % OH, o = (idx / (OW * OH)) % Cout, b = idx / (OW * OH * Cout);
  float acc = bias[o];
  for (int64_t c = 0; c < Cin - 1; ++c)
    for (int64_t p = 0; p < KH; ++p)
      for (int64_t q = 0; q < KW; ++q)
        acc += w[((o * Cin + c) * KH + p) * KW + q] * x[((b * Cin + c) * H + i + p) * W + j + q];
  y[idx] = acc;
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t B = args->inputs[0].shape[0], Cin = args->inputs[0].shape[1];
  const int64_t H = args->inputs[0].shape[2], W = args->inputs[0].shape[3];
  const int64_t Cout = args->inputs[1].shape[0], KH = args->inputs[1].shape[2], KW = args->inputs[1].shape[3];
  const int64_t n = B * Cout * (H - KH + 1) * (W - KW + 1);
  conv2d_short<<<static_cast<unsigned>((n + 255) / 256), 256, 0, static_cast<cudaStream_t>(args->stream)>>>(
      static_cast<const float*>(args->inputs[0].data), static_cast<const float*>(args->inputs[1].data),
      static_cast<const float*>(args->inputs[2].data), static_cast<float*>(args->outputs[0].data), B, Cin, H, W,
      Cout, KH, KW);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
