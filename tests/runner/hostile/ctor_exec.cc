// Hostile: runs system() from a library constructor, i.e. during dlopen().
// Expected: the seccomp filter is already installed, the runner is killed
// (SIGSYS) before it answers LoadResult.
#include <stdlib.h>

#include "crl/kernel.h"

__attribute__((constructor)) static void Pwn() {
  int rc = system("echo pwned");
  (void)rc;
}

extern "C" CRL_EXPORT int crl_run(const crl_args*) { return 0; }
