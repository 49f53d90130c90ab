// Hostile: abort(). Expected: kSignaled SIGABRT.
#include <cstdlib>

#include "crl/kernel.h"

extern "C" CRL_EXPORT int crl_run(const crl_args*) {
  std::abort();
}
