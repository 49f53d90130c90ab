// expect: OK — faster: 16 x 16 output tiles; each block stages the input halo tile for all Cin
// channels plus the filters of 4 output channels in shared memory, and each thread produces 4
// outputs (one pixel, 4 channels). Direct kernel as fallback when the tile exceeds 48 KB.
#include <crl/kernel.h>
#include <cuda_runtime.h>

#include <cstdint>

constexpr int TS = 16, OG = 4;

__global__ void __launch_bounds__(TS * TS) conv2d_tiled(const float* __restrict__ x, const float* __restrict__ w,
                                                        const float* __restrict__ bias, float* __restrict__ y,
                                                        int64_t Cin, int64_t H, int64_t W, int64_t Cout, int64_t KH,
                                                        int64_t KW, int64_t tiles_x) {
  extern __shared__ float sh[];
  const int64_t OH = H - KH + 1, OW = W - KW + 1;
  const int64_t TH = TS + KH - 1, TW = TS + KW - 1;
  float* xs = sh;
  float* ws = sh + Cin * TH * TW;
  const int64_t b = blockIdx.y, o0 = static_cast<int64_t>(blockIdx.z) * OG;
  const int64_t i0 = (blockIdx.x / tiles_x) * TS, j0 = (blockIdx.x % tiles_x) * TS;
  const int tid = threadIdx.y * TS + threadIdx.x;
  for (int64_t l = tid; l < Cin * TH * TW; l += TS * TS) {
    const int64_t c = l / (TH * TW), r = (l / TW) % TH, s = l % TW;
    const int64_t gi = i0 + r, gj = j0 + s;
    xs[l] = (gi < H && gj < W) ? x[((b * Cin + c) * H + gi) * W + gj] : 0.0f;
  }
  const int64_t per_o = Cin * KH * KW;
  for (int64_t l = tid; l < OG * per_o; l += TS * TS) {
    const int64_t o = o0 + l / per_o;
    ws[l] = o < Cout ? w[o * per_o + l % per_o] : 0.0f;
  }
  __syncthreads();
  const int64_t i = i0 + threadIdx.y, j = j0 + threadIdx.x;
  if (i >= OH || j >= OW) return;
  float acc[OG];
#pragma unroll
  for (int g = 0; g < OG; ++g) acc[g] = o0 + g < Cout ? bias[o0 + g] : 0.0f;
  for (int64_t c = 0; c < Cin; ++c)
    for (int64_t p = 0; p < KH; ++p) {
      const float* xr = xs + (c * TH + threadIdx.y + p) * TW + threadIdx.x;
      const float* wr = ws + (c * KH + p) * KW;
      for (int64_t q = 0; q < KW; ++q) {
        const float xv = xr[q];
#pragma unroll
        for (int g = 0; g < OG; ++g) acc[g] += wr[g * per_o + q] * xv;
      }
    }
#pragma unroll
  for (int g = 0; g < OG; ++g)
    if (o0 + g < Cout) y[((b * Cout + o0 + g) * OH + i) * OW + j] = acc[g];
}

__global__ void conv2d_direct(const float* x, const float* w, const float* bias, float* y, int64_t B, int64_t Cin,
                              int64_t H, int64_t W, int64_t Cout, int64_t KH, int64_t KW) {
  const int64_t OH = H - KH + 1, OW = W - KW + 1;
  const int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (idx >= B * Cout * OH * OW) return;
  const int64_t j = idx % OW, i = (idx / OW) % OH, o = (idx / (OW * OH)) % Cout, b = idx / (OW * OH * Cout);
  float acc = bias[o];
  for (int64_t c = 0; c < Cin; ++c)
    for (int64_t p = 0; p < KH; ++p)
      for (int64_t q = 0; q < KW; ++q)
        acc += w[((o * Cin + c) * KH + p) * KW + q] * x[((b * Cin + c) * H + i + p) * W + j + q];
  y[idx] = acc;
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t B = args->inputs[0].shape[0], Cin = args->inputs[0].shape[1];
  const int64_t H = args->inputs[0].shape[2], W = args->inputs[0].shape[3];
  const int64_t Cout = args->inputs[1].shape[0], KH = args->inputs[1].shape[2], KW = args->inputs[1].shape[3];
  const int64_t OH = H - KH + 1, OW = W - KW + 1;
  cudaStream_t s = static_cast<cudaStream_t>(args->stream);
  const float* x = static_cast<const float*>(args->inputs[0].data);
  const float* w = static_cast<const float*>(args->inputs[1].data);
  const float* bias = static_cast<const float*>(args->inputs[2].data);
  float* y = static_cast<float*>(args->outputs[0].data);
  const size_t shmem = static_cast<size_t>(Cin * (TS + KH - 1) * (TS + KW - 1) + OG * Cin * KH * KW) * sizeof(float);
  if (shmem <= 48 * 1024) {
    const int64_t tiles_x = (OW + TS - 1) / TS, tiles_y = (OH + TS - 1) / TS;
    dim3 grid(static_cast<unsigned>(tiles_x * tiles_y), static_cast<unsigned>(B), static_cast<unsigned>((Cout + OG - 1) / OG));
    conv2d_tiled<<<grid, dim3(TS, TS), shmem, s>>>(x, w, bias, y, Cin, H, W, Cout, KH, KW, tiles_x);
  } else {
    const int64_t n = B * Cout * OH * OW;
    conv2d_direct<<<static_cast<unsigned>((n + 255) / 256), 256, 0, s>>>(x, w, bias, y, B, Cin, H, W, Cout, KH, KW);
  }
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
