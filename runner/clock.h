// runner/clock.h — the runner library's one clock: CLOCK_MONOTONIC in seconds.
// Thread-safe.
#ifndef CRL_RUNNER_CLOCK_H_
#define CRL_RUNNER_CLOCK_H_

namespace crl::runner {

// Seconds since an arbitrary fixed point; never goes backwards.
double MonotonicSeconds();

}  // namespace crl::runner

#endif  // CRL_RUNNER_CLOCK_H_
