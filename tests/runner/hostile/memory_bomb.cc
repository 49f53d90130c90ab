// Hostile: allocates and touches memory until something stops it.
// Expected under RLIMIT_AS: std::bad_alloc -> terminate -> SIGABRT, with
// "bad_alloc" in the log (ExitInfo::memory_limit_hint).
#include <cstring>
#include <vector>

#include "crl/kernel.h"

extern "C" CRL_EXPORT int crl_run(const crl_args*) {
  std::vector<char*> blocks;
  for (;;) {
    char* p = new char[256u << 20];
    std::memset(p, 1, 256u << 20);
    blocks.push_back(p);
  }
  return 0;
}
