// expect: RUNTIME_ERROR — writes through a wild pointer (a sticky CUDA error).
#include <crl/kernel.h>
#include <cuda_runtime.h>

__global__ void wild(float* p) { p[threadIdx.x] = 1.0f; }

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  wild<<<1, 32, 0, static_cast<cudaStream_t>(args->stream)>>>(
      reinterpret_cast<float*>(0x10));
  return 0;
}
