// Hostile: never returns. Expected: wall timeout (kTimedOut) or CPU limit.
#include "crl/kernel.h"

extern "C" CRL_EXPORT int crl_run(const crl_args*) {
  volatile unsigned long x = 0;
  for (;;) x = x + 1;
  return 0;
}
