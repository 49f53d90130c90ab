// expect: WRONG_ANSWER — launches nothing and returns: y keeps whatever the allocation held
// (a previous run's result, if the harness reuses buffers without poisoning them).
#include <crl/kernel.h>
#include <cuda_runtime.h>

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  (void)args;
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
