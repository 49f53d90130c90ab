// Hostile: ptrace. Expected: seccomp kill (SIGSYS).
#include <sys/ptrace.h>

#include "crl/kernel.h"

extern "C" CRL_EXPORT int crl_run(const crl_args*) {
  ptrace(PTRACE_TRACEME, 0, nullptr, nullptr);
  return 0;
}
