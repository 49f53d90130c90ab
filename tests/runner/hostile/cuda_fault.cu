// Hostile/broken: writes through a wild pointer. Expected: the device-wide
// sync reports an illegal address, the runner answers kCudaError and exits 3.
#include "crl/kernel.h"

__global__ void Wild(float* p) { p[threadIdx.x] = 1.0f; }

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  Wild<<<1, 32, 0, static_cast<cudaStream_t>(args->stream)>>>(reinterpret_cast<float*>(0x10));
  return 0;
}
