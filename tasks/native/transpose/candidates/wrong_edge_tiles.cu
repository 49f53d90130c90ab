// expect: WRONG_ANSWER — tiled transpose launched over full tiles only (grid = N / 32, D / 32 rounded
// down): right when N and D are multiples of 32, otherwise the edge of y is left unwritten.
#include <crl/kernel.h>
#include <cuda_runtime.h>

#include <cstdint>

constexpr int TILE = 32, ROWS = 8;

__global__ void transpose_full_tiles(const float* __restrict__ x, float* __restrict__ y, int64_t N, int64_t D) {
  __shared__ float tile[TILE][TILE + 1];
  const int64_t j = static_cast<int64_t>(blockIdx.x) * TILE + threadIdx.x;
  const int64_t i0 = static_cast<int64_t>(blockIdx.y) * TILE;
  for (int r = threadIdx.y; r < TILE; r += ROWS) tile[r][threadIdx.x] = x[(i0 + r) * D + j];
  __syncthreads();
  const int64_t oi = i0 + threadIdx.x, oj0 = static_cast<int64_t>(blockIdx.x) * TILE;
  for (int r = threadIdx.y; r < TILE; r += ROWS) y[(oj0 + r) * N + oi] = tile[threadIdx.x][r];
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  dim3 grid(static_cast<unsigned>(D / TILE), static_cast<unsigned>(N / TILE));
  if (grid.x > 0 && grid.y > 0)
    transpose_full_tiles<<<grid, dim3(TILE, ROWS), 0, static_cast<cudaStream_t>(args->stream)>>>(
        static_cast<const float*>(args->inputs[0].data), static_cast<float*>(args->outputs[0].data), N, D);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
