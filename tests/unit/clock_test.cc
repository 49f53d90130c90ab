#include <catch2/catch.hpp>

#include "common/backoff.h"
#include "common/clock.h"

namespace crl {
namespace {

TEST_CASE("FakeClock advances only when told (or when code sleeps)", "[clock]") {
  FakeClock clock(absl::FromUnixSeconds(1000));
  CHECK(clock.Now() == absl::FromUnixSeconds(1000));
  clock.Advance(absl::Seconds(5));
  CHECK(clock.Now() == absl::FromUnixSeconds(1005));
  clock.SleepFor(absl::Milliseconds(250));
  CHECK(clock.MonotonicNow() == absl::FromUnixSeconds(1005) + absl::Milliseconds(250));
}

TEST_CASE("RealClock's monotonic time does not go backwards", "[clock]") {
  RealClock* clock = RealClock::Get();
  absl::Time a = clock->MonotonicNow();
  absl::Time b = clock->MonotonicNow();
  CHECK(b >= a);
  CHECK(clock->Now() > absl::FromUnixSeconds(1600000000));
}

}  // namespace
}  // namespace crl

TEST_CASE("Backoff doubles from its first wait to its cap, and starts over after a reset", "[clock]") {
  crl::Backoff b(absl::Milliseconds(200), absl::Seconds(1));
  CHECK(b.Peek() == absl::Milliseconds(200));
  CHECK(b.Next() == absl::Milliseconds(200));
  CHECK(b.Next() == absl::Milliseconds(400));
  CHECK(b.Next() == absl::Milliseconds(800));
  CHECK(b.Next() == absl::Seconds(1));
  CHECK(b.Next() == absl::Seconds(1));
  CHECK(b.attempts() == 5);
  b.Reset();
  CHECK(b.Next() == absl::Milliseconds(200));
  // Far attempts neither overflow nor pass the cap; a cap below the first
  // wait is the first wait.
  CHECK(crl::Backoff::Nth(absl::Milliseconds(500), absl::Seconds(30), 1000) == absl::Seconds(30));
  CHECK(crl::Backoff(absl::Seconds(2), absl::Seconds(1)).Next() == absl::Seconds(2));
}
