#include "common/clock.h"

#include <time.h>

namespace crl {

absl::Time RealClock::Now() const { return absl::Now(); }

absl::Time RealClock::MonotonicNow() const {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return absl::UnixEpoch() + absl::DurationFromTimespec(ts);
}

void RealClock::SleepFor(absl::Duration d) { absl::SleepFor(d); }

RealClock* RealClock::Get() {
  static RealClock* clock = new RealClock();
  return clock;
}

FakeClock::FakeClock(absl::Time start) : now_(start) {}

absl::Time FakeClock::Now() const {
  absl::MutexLock lock(&mu_);
  return now_;
}

absl::Time FakeClock::MonotonicNow() const { return Now(); }

void FakeClock::SleepFor(absl::Duration d) { Advance(d); }

void FakeClock::Advance(absl::Duration d) {
  absl::MutexLock lock(&mu_);
  now_ += d;
}

}  // namespace crl
