// Hostile: a fork bomb. Expected: seccomp kills the runner at the first fork.
#include <unistd.h>

#include "crl/kernel.h"

extern "C" CRL_EXPORT int crl_run(const crl_args*) {
  for (;;) fork();
  return 0;
}
