// Returns a non-zero status. Expected: kCandidateError, runner keeps serving.
#include "crl/kernel.h"

extern "C" CRL_EXPORT int crl_run(const crl_args*) { return 42; }
