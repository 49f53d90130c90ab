// expect: OK — faster: a block of 128 x 4 threads computes a 128-step window for 4 output channels
// (one output per thread); the x window (Cin x (128 + K - 1)) is staged once in shared memory and
// reused by all 4 channels, the 4 filters sit in shared memory, and the inner loop uses 32-bit
// shared-memory indexing only. Direct kernel if the tile would exceed 48 KB.
#include <crl/kernel.h>
#include <cuda_runtime.h>

#include <cstdint>

constexpr int TT = 128, OG = 4;

__global__ void __launch_bounds__(TT * OG) conv1d_tiled(const float* __restrict__ x, const float* __restrict__ w,
                                                        const float* __restrict__ bias, float* __restrict__ y, int Cin,
                                                        int64_t L, int Cout, int K) {
  extern __shared__ float sh[];
  const int W = TT + K - 1, CK = Cin * K;
  float* xs = sh;            // [Cin][W]
  float* ws = sh + Cin * W;  // [OG][Cin*K]
  const int64_t Lout = L - K + 1;
  const int64_t b = blockIdx.y, t0 = static_cast<int64_t>(blockIdx.x) * TT;
  const int o0 = blockIdx.z * OG, tid = threadIdx.y * TT + threadIdx.x;
  for (int c = threadIdx.y; c < Cin; c += OG) {
    const float* xr = x + (b * Cin + c) * L;
    for (int u = threadIdx.x; u < W; u += TT) xs[c * W + u] = t0 + u < L ? __ldg(&xr[t0 + u]) : 0.0f;
  }
  for (int g = 0; g < OG; ++g) {
    const int o = o0 + g;
    for (int r = tid; r < CK; r += TT * OG) ws[g * CK + r] = o < Cout ? __ldg(&w[static_cast<int64_t>(o) * CK + r]) : 0.0f;
  }
  __syncthreads();
  const int o = o0 + threadIdx.y;
  const int64_t t = t0 + threadIdx.x;
  if (t >= Lout || o >= Cout) return;
  const float* wr = ws + threadIdx.y * CK;
  float acc = __ldg(&bias[o]);
  for (int c = 0; c < Cin; ++c) {
    const float* xr = xs + c * W + threadIdx.x;
    const float* wc = wr + c * K;
    for (int k = 0; k < K; ++k) acc = fmaf(wc[k], xr[k], acc);
  }
  y[(b * Cout + o) * Lout + t] = acc;
}

__global__ void conv1d_direct(const float* x, const float* w, const float* bias, float* y, int64_t B, int64_t Cin,
                              int64_t L, int64_t Cout, int64_t K) {
  const int64_t Lout = L - K + 1;
  const int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (idx >= B * Cout * Lout) return;
  const int64_t t = idx % Lout, o = (idx / Lout) % Cout, b = idx / (Lout * Cout);
  float acc = bias[o];
  for (int64_t c = 0; c < Cin; ++c)
    for (int64_t k = 0; k < K; ++k) acc += w[(o * Cin + c) * K + k] * x[(b * Cin + c) * L + t + k];
  y[idx] = acc;
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t B = args->inputs[0].shape[0], Cin = args->inputs[0].shape[1], L = args->inputs[0].shape[2];
  const int64_t Cout = args->inputs[1].shape[0], K = args->inputs[1].shape[2];
  const int64_t Lout = L - K + 1;
  cudaStream_t s = static_cast<cudaStream_t>(args->stream);
  const float* x = static_cast<const float*>(args->inputs[0].data);
  const float* w = static_cast<const float*>(args->inputs[1].data);
  const float* bias = static_cast<const float*>(args->inputs[2].data);
  float* y = static_cast<float*>(args->outputs[0].data);
  const size_t shmem = static_cast<size_t>(Cin * (TT + K - 1) + OG * Cin * K) * sizeof(float);
  if (shmem <= 48 * 1024) {
    dim3 grid(static_cast<unsigned>((Lout + TT - 1) / TT), static_cast<unsigned>(B), static_cast<unsigned>((Cout + OG - 1) / OG));
    conv1d_tiled<<<grid, dim3(TT, OG), shmem, s>>>(x, w, bias, y, static_cast<int>(Cin), L, static_cast<int>(Cout),
                                                  static_cast<int>(K));
  } else {
    const int64_t n = B * Cout * Lout;
    conv1d_direct<<<static_cast<unsigned>((n + 255) / 256), 256, 0, s>>>(x, w, bias, y, B, Cin, L, Cout, K);
  }
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
