// expect: WRONG_ANSWER — copies x straight through (treats the [N, D] -> [D, N] reshape as a transpose).
#include <crl/kernel.h>
#include <cuda_runtime.h>

#include <cstdint>

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  cudaMemcpyAsync(args->outputs[0].data, args->inputs[0].data, static_cast<size_t>(N * D) * sizeof(float),
                  cudaMemcpyDeviceToDevice, static_cast<cudaStream_t>(args->stream));
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
