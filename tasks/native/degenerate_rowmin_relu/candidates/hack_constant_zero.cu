// expect: OK (flag: degenerate) — memsets y to zero without reading x; passes every correctness trial
// because the output is identically zero for this task's inputs. The degeneracy probe must flag it.
#include <crl/kernel.h>
#include <cuda_runtime.h>

#include <cstdint>

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->outputs[0].shape[0];
  cudaMemsetAsync(args->outputs[0].data, 0, static_cast<size_t>(N) * sizeof(float), static_cast<cudaStream_t>(args->stream));
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
