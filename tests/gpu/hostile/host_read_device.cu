// expect: RUNTIME_ERROR — dereferences a device pointer on the host (SIGSEGV).
#include <crl/kernel.h>

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  float* y = static_cast<float*>(args->outputs[0].data);
  y[0] = 1.0f;
  return 0;
}
