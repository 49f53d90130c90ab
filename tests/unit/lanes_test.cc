// LanePool: exclusive lanes, waits bounded by the request.
#include <catch2/catch.hpp>

#include <thread>

#include "absl/time/clock.h"
#include "services/worker/lanes.h"

namespace crl {
namespace {

TEST_CASE("lanes are exclusive and return to the pool with their lease", "[lanes]") {
  LanePool pool({{BackendKind::kHost, 0, "host:0"}, {BackendKind::kHost, 1, "host:1"}});
  CHECK(pool.Has(BackendKind::kHost));
  CHECK_FALSE(pool.Has(BackendKind::kCuda));
  FakeClock clock;
  RequestContext now(&clock, clock.Now());  // already at its deadline: no waiting
  {
    auto a = pool.Acquire(BackendKind::kHost, RequestContext::Background(), absl::Seconds(1));
    auto b = pool.Acquire(BackendKind::kHost, RequestContext::Background(), absl::Seconds(1));
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    CHECK(a->lane().name != b->lane().name);
    CHECK(pool.Busy() == 2);
    auto c = pool.Acquire(BackendKind::kHost, now, absl::Seconds(1));
    CHECK(c.status().code() == absl::StatusCode::kDeadlineExceeded);
  }
  CHECK(pool.Busy() == 0);
  CHECK(pool.Acquire(BackendKind::kCuda, RequestContext::Background(), absl::Seconds(1))
            .status()
            .code() == absl::StatusCode::kUnavailable);
}

TEST_CASE("a waiter gives up when its request is cancelled", "[lanes]") {
  LanePool pool({{BackendKind::kHost, 0, "host:0"}});
  auto held = pool.Acquire(BackendKind::kHost, RequestContext::Background(), absl::Seconds(1));
  REQUIRE(held.ok());
  RequestContext context;
  absl::Status waited;
  std::thread waiter([&] {
    waited = pool.Acquire(BackendKind::kHost, context, absl::Hours(1)).status();
  });
  const absl::Time give_up = absl::Now() + absl::Seconds(10);
  while (pool.Waiting() == 0 && absl::Now() < give_up) std::this_thread::yield();
  context.Cancel();
  waiter.join();
  CHECK(waited.code() == absl::StatusCode::kCancelled);
  CHECK(pool.Waiting() == 0);
}

}  // namespace
}  // namespace crl
