// An injectable clock. Logic takes a ClockInterface* instead of calling now(),
// so tests run on simulated time (FakeClock) without sleeps.
#ifndef CRL_COMMON_CLOCK_H_
#define CRL_COMMON_CLOCK_H_

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace crl {

class ClockInterface {
 public:
  virtual ~ClockInterface() = default;
  // Wall-clock time (for timestamps people read).
  virtual absl::Time Now() const = 0;
  // Monotonic time (for durations and deadlines); never goes backwards.
  virtual absl::Time MonotonicNow() const = 0;
  virtual void SleepFor(absl::Duration d) = 0;
};

// The real clock. Thread-safe. MonotonicNow() is CLOCK_MONOTONIC expressed as
// an absl::Time since an arbitrary epoch.
class RealClock final : public ClockInterface {
 public:
  absl::Time Now() const override;
  absl::Time MonotonicNow() const override;
  void SleepFor(absl::Duration d) override;
  // A process-wide instance, for main().
  static RealClock* Get();
};

// Simulated time for tests. Thread-safe. SleepFor advances the clock instead
// of blocking, so code under test that sleeps finishes instantly.
class FakeClock final : public ClockInterface {
 public:
  explicit FakeClock(absl::Time start = absl::UnixEpoch() + absl::Hours(24));
  absl::Time Now() const override;
  absl::Time MonotonicNow() const override;
  void SleepFor(absl::Duration d) override;
  void Advance(absl::Duration d);

 private:
  mutable absl::Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_);
};

}  // namespace crl

#endif  // CRL_COMMON_CLOCK_H_
