// expect: OK — correct but slow: one thread per (b, o) output plane, looping over all its pixels.
#include <crl/kernel.h>
#include <cuda_runtime.h>

#include <cstdint>

__global__ void conv2d_plane_thread(const float* x, const float* w, const float* bias, float* y, int64_t B,
                                    int64_t Cin, int64_t H, int64_t W, int64_t Cout, int64_t KH, int64_t KW) {
  const int64_t r = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (r >= B * Cout) return;
  const int64_t b = r / Cout, o = r % Cout, OH = H - KH + 1, OW = W - KW + 1;
  for (int64_t i = 0; i < OH; ++i)
    for (int64_t j = 0; j < OW; ++j) {
      float acc = bias[o];
      for (int64_t c = 0; c < Cin; ++c)
        for (int64_t p = 0; p < KH; ++p)
          for (int64_t q = 0; q < KW; ++q)
            acc += w[((o * Cin + c) * KH + p) * KW + q] * x[((b * Cin + c) * H + i + p) * W + j + q];
      y[(r * OH + i) * OW + j] = acc;
    }
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t B = args->inputs[0].shape[0], Cin = args->inputs[0].shape[1];
  const int64_t H = args->inputs[0].shape[2], W = args->inputs[0].shape[3];
  const int64_t Cout = args->inputs[1].shape[0], KH = args->inputs[1].shape[2], KW = args->inputs[1].shape[3];
  conv2d_plane_thread<<<static_cast<unsigned>((B * Cout + 31) / 32), 32, 0, static_cast<cudaStream_t>(args->stream)>>>(
      static_cast<const float*>(args->inputs[0].data), static_cast<const float*>(args->inputs[1].data),
      static_cast<const float*>(args->inputs[2].data), static_cast<float*>(args->outputs[0].data), B, Cin, H, W,
      Cout, KH, KW);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
