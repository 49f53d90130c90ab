#include <catch2/catch.hpp>

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
