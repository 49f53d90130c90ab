// Exponential back-off, the one place it is written: the wait before each
// retry doubles from `initial` and stops growing at `max`.
//
//   Backoff backoff(absl::Milliseconds(200), absl::Seconds(5));
//   while (!(s = Call()).ok()) clock->SleepFor(backoff.Next());  // 200 ms, 400 ms, ... 5 s, 5 s
//
// Not thread-safe: one per retry loop (or per slot it paces).
#ifndef CRL_COMMON_BACKOFF_H_
#define CRL_COMMON_BACKOFF_H_

#include <algorithm>

#include "absl/time/time.h"

namespace crl {

class Backoff {
 public:
  Backoff(absl::Duration initial, absl::Duration max) : initial_(initial), max_(std::max(initial, max)) {}

  // The wait before attempt number `attempt` (0: the first retry):
  // min(max, initial * 2^attempt), without overflow.
  static absl::Duration Nth(absl::Duration initial, absl::Duration max, int attempt) {
    absl::Duration d = std::min(initial, max);
    for (int i = 0; i < attempt && d < max; ++i) d *= 2;
    return std::min(d, max);
  }

  // The wait to take now; the next one is twice it, at most max.
  absl::Duration Next() { return Nth(initial_, max_, attempts_++); }
  // What Next() would return, without counting an attempt.
  absl::Duration Peek() const { return Nth(initial_, max_, attempts_); }
  // After a success: the next wait is `initial` again.
  void Reset() { attempts_ = 0; }
  // Retries counted since the last Reset().
  int attempts() const { return attempts_; }

 private:
  absl::Duration initial_, max_;
  int attempts_ = 0;
};

}  // namespace crl

#endif  // CRL_COMMON_BACKOFF_H_
