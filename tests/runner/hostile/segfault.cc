// Hostile: dereferences null. Expected: kSignaled SIGSEGV.
#include "crl/kernel.h"

extern "C" CRL_EXPORT int crl_run(const crl_args*) {
  volatile int* p = nullptr;
  *p = 42;
  return 0;
}
