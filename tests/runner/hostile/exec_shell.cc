// Hostile: execs a shell. Expected: seccomp kill (SIGSYS).
#include <unistd.h>

#include "crl/kernel.h"

extern "C" CRL_EXPORT int crl_run(const crl_args*) {
  execl("/bin/sh", "sh", "-c", "echo pwned > /tmp/pwned", static_cast<char*>(nullptr));
  return 1;
}
