// Hostile: forks after the CUDA context exists. Expected: seccomp kill.
#include <unistd.h>

#include "crl/kernel.h"

extern "C" CRL_EXPORT int crl_run(const crl_args*) {
  fork();
  return 0;
}
