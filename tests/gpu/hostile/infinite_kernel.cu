// expect: TIMEOUT — a kernel that never finishes.
#include <crl/kernel.h>
#include <cuda_runtime.h>

// The output is poisoned (never 12345) and nothing else writes it: spins forever.
__global__ void spin(volatile int* flag) {
  while (*flag != 12345) {
  }
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  spin<<<1, 1, 0, static_cast<cudaStream_t>(args->stream)>>>(
      static_cast<volatile int*>(args->outputs[0].data) + 1);
  return 0;
}
