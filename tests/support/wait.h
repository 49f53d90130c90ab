// Waiting in tests on a condition, never on a fixed sleep: the one polling
// helper of the test tree.
//
//   REQUIRE(crl::testing::Eventually([&] { return pool.idle() >= 1; }));             // 10 s, spinning
//   CHECK(crl::testing::Eventually([&] { return Scrape() == 4; }, absl::Seconds(30),  // 30 s, every
//                                  absl::Milliseconds(300)));                        // 300 ms
//
// A test that must see that something does NOT happen still sleeps for a
// while and then checks; that is a bound on the claim, not a wait.
#ifndef CRL_TESTS_SUPPORT_WAIT_H_
#define CRL_TESTS_SUPPORT_WAIT_H_

#include <thread>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace crl::testing {

// True as soon as `done()` holds; false when it still does not after
// `limit`. Between tries: `poll` (zero: yield the CPU and try again).
template <typename F>
bool Eventually(F done, absl::Duration limit = absl::Seconds(10), absl::Duration poll = absl::ZeroDuration()) {
  const absl::Time give_up = absl::Now() + limit;
  while (!done()) {
    if (absl::Now() > give_up) return false;
    if (poll > absl::ZeroDuration()) {
      absl::SleepFor(poll);
    } else {
      std::this_thread::yield();
    }
  }
  return true;
}

}  // namespace crl::testing

#endif  // CRL_TESTS_SUPPORT_WAIT_H_
