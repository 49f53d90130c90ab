// LanePool: exclusive lanes, waits bounded by the request; verifications
// sharing a GPU lane up to its slots, timing alone and not starved, a host
// lane never shared, leases stepping aside for timing and coming back, each
// lane's busy time reported once per busy period.
#include <catch2/catch.hpp>

#include <atomic>
#include <map>
#include <optional>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "services/worker/lanes/lanes.h"

namespace crl {
namespace {

TEST_CASE("lanes pin to CPUs from the end: host lanes last, GPU lanes before them, never CPU 0", "[lanes]") {
  const Lane host0{BackendKind::kHost, 0, "host:0"}, host1{BackendKind::kHost, 1, "host:1"};
  const Lane gpu0{BackendKind::kCuda, 0, "cuda:0"}, gpu1{BackendKind::kCuda, 1, "cuda:1"};
  CHECK(LaneCpu(host0, 2, 16) == 15);
  CHECK(LaneCpu(host1, 2, 16) == 14);
  CHECK(LaneCpu(gpu0, 2, 16) == 13);
  CHECK(LaneCpu(gpu1, 2, 16) == 12);
  CHECK(LaneCpu(gpu0, 0, 16) == 15);  // no host lanes
  CHECK(LaneCpu(gpu0, 1, 2) == -1);   // would be CPU 0
  CHECK(LaneCpu(host1, 1, 1) == 0);   // host lanes wrap on a one-CPU machine
}

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

TEST_CASE("verifications share a GPU lane up to its slots; timing has it alone", "[lanes]") {
  FakeClock clock;
  std::vector<std::pair<std::string, absl::Duration>> idle;
  LanePoolOptions o;
  o.verify_slots_per_gpu = 2;
  o.clock = &clock;
  o.on_idle = [&](const Lane& lane, absl::Duration d) { idle.emplace_back(lane.name, d); };
  LanePool pool({{BackendKind::kCuda, 0, "cuda:0"}, {BackendKind::kHost, 0, "host:0"}}, o);
  RequestContext now(&clock, clock.Now());  // no waiting
  const RequestContext& bg = RequestContext::Background();
  {
    auto a = pool.Acquire(BackendKind::kCuda, bg, absl::Seconds(1), LaneUse::kShared);
    REQUIRE(a.ok());
    CHECK_FALSE(a->SharedWithOthers());
    clock.Advance(absl::Seconds(3));
    auto b = pool.Acquire(BackendKind::kCuda, bg, absl::Seconds(1), LaneUse::kShared);
    REQUIRE(b.ok());
    CHECK(b->lane().name == "cuda:0");
    CHECK(a->SharedWithOthers());  // b came while a held the lane
    CHECK(b->SharedWithOthers());
    CHECK(pool.Busy() == 1);
    // Full, and timing waits for every verification to end.
    CHECK(pool.Acquire(BackendKind::kCuda, now, absl::Seconds(1), LaneUse::kShared).status().code() ==
          absl::StatusCode::kDeadlineExceeded);
    CHECK(pool.Acquire(BackendKind::kCuda, now, absl::Seconds(1)).status().code() ==
          absl::StatusCode::kDeadlineExceeded);
    // A host lane is one CPU: never shared.
    auto h = pool.Acquire(BackendKind::kHost, bg, absl::Seconds(1), LaneUse::kShared);
    REQUIRE(h.ok());
    CHECK(pool.Acquire(BackendKind::kHost, now, absl::Seconds(1), LaneUse::kShared).status().code() ==
          absl::StatusCode::kDeadlineExceeded);
    clock.Advance(absl::Seconds(2));
  }
  // One busy period per lane: cuda:0 from a's start to the last release.
  REQUIRE(idle.size() == 2);
  std::map<std::string, absl::Duration> by_lane(idle.begin(), idle.end());
  CHECK(by_lane["cuda:0"] == absl::Seconds(5));
  CHECK(by_lane["host:0"] == absl::Seconds(2));

  auto t = pool.Acquire(BackendKind::kCuda, bg, absl::Seconds(1));
  REQUIRE(t.ok());
  CHECK_FALSE(t->SharedWithOthers());
  CHECK(pool.Acquire(BackendKind::kCuda, now, absl::Seconds(1), LaneUse::kShared).status().code() ==
        absl::StatusCode::kDeadlineExceeded);
}

TEST_CASE("a request readying its processes picks the least-held lane, in turn among ties, and waits for that "
          "lane only", "[lanes]") {
  LanePoolOptions o;
  o.verify_slots_per_gpu = 2;
  LanePool pool({{BackendKind::kCuda, 0, "cuda:0"}, {BackendKind::kCuda, 1, "cuda:1"},
                 {BackendKind::kHost, 0, "host:0"}},
                o);
  const RequestContext& bg = RequestContext::Background();
  CHECK(pool.LeastHeld(BackendKind::kCuda) != pool.LeastHeld(BackendKind::kCuda));  // ties in turn
  CHECK(pool.LeastHeld(BackendKind::kHost) == 2);
  LanePool gpus_only({{BackendKind::kCuda, 0, "cuda:0"}});
  CHECK(gpus_only.LeastHeld(BackendKind::kHost) == 1);  // none: lanes().size()
  CHECK(gpus_only.AcquireOn(5, bg, absl::Seconds(1), LaneUse::kShared).status().code() ==
        absl::StatusCode::kInvalidArgument);

  auto on1 = pool.AcquireOn(1, bg, absl::Seconds(1), LaneUse::kShared);
  REQUIRE(on1.ok());
  CHECK(on1->lane().name == "cuda:1");
  CHECK(pool.LeastHeld(BackendKind::kCuda) == 0);
  CHECK(pool.LeastHeld(BackendKind::kCuda) == 0);
  // cuda:1 full (both its slots): a request for it waits (counted) though cuda:0 is free.
  auto alone = pool.AcquireOn(1, bg, absl::Seconds(1), LaneUse::kShared);
  REQUIRE(alone.ok());
  std::optional<LaneLease> a(std::move(*on1)), b(std::move(*alone));
  std::optional<absl::StatusOr<LaneLease>> third;
  std::thread waiter([&] { third.emplace(pool.AcquireOn(1, bg, absl::Seconds(10), LaneUse::kShared)); });
  const absl::Time give_up = absl::Now() + absl::Seconds(10);
  while (pool.Waiting() == 0 && absl::Now() < give_up) std::this_thread::yield();
  CHECK(pool.Waiting() == 1);
  a.reset();
  waiter.join();
  REQUIRE(third.has_value());
  REQUIRE(third->ok());
  CHECK((*third)->lane().name == "cuda:1");
  CHECK(pool.Waiting() == 0);
}

TEST_CASE("timing waiting for a shared GPU lane holds back new verifications", "[lanes]") {
  LanePoolOptions o;
  o.verify_slots_per_gpu = 4;
  LanePool pool({{BackendKind::kCuda, 0, "cuda:0"}}, o);
  FakeClock clock;
  RequestContext now(&clock, clock.Now());
  const RequestContext& bg = RequestContext::Background();
  std::optional<LaneLease> verifying(
      *pool.Acquire(BackendKind::kCuda, bg, absl::Seconds(1), LaneUse::kShared));
  absl::Status timed;
  std::thread timing([&] {
    auto lease = pool.Acquire(BackendKind::kCuda, bg, absl::Seconds(30));
    timed = lease.status();
  });
  const absl::Time give_up = absl::Now() + absl::Seconds(10);
  while (pool.Waiting() == 0 && absl::Now() < give_up) std::this_thread::yield();
  REQUIRE(pool.Waiting() == 1);
  // Slots are free, but timing is waiting: a new verification does not jump
  // the queue.
  CHECK(pool.Acquire(BackendKind::kCuda, now, absl::Seconds(1), LaneUse::kShared).status().code() ==
        absl::StatusCode::kDeadlineExceeded);
  // Nor does warming the pool's processes (a window is open: with the
  // default batch of 1, at the first wait).
  CHECK(pool.Acquire(BackendKind::kCuda, now, absl::Seconds(1), LaneUse::kStart).status().code() ==
        absl::StatusCode::kDeadlineExceeded);
  verifying.reset();
  timing.join();
  CHECK(timed.ok());
  CHECK(pool.Busy() == 0);
}

TEST_CASE("a shared lease upgrades in place once the others on its lane end; one upgrade at a time", "[lanes]") {
  LanePoolOptions o;
  o.verify_slots_per_gpu = 3;
  LanePool pool({{BackendKind::kCuda, 0, "cuda:0"}, {BackendKind::kCuda, 1, "cuda:1"}}, o);
  FakeClock clock;
  RequestContext now(&clock, clock.Now());  // no waiting
  const RequestContext& bg = RequestContext::Background();
  auto shared = [&](const RequestContext& c) {
    return pool.Acquire(BackendKind::kCuda, c, absl::Seconds(1), LaneUse::kShared);
  };
  // a and b on cuda:0 (the least-held lane is taken: c lands on cuda:1).
  std::optional<LaneLease> a(*shared(bg));
  std::optional<LaneLease> c(*shared(bg));
  std::optional<LaneLease> b(*shared(bg));
  REQUIRE(a->lane().name == b->lane().name);
  REQUIRE(c->lane().name != a->lane().name);

  // A lease alone on its lane upgrades at once, and is then exclusive.
  REQUIRE(c->Upgrade(now, absl::Seconds(1)).ok());
  {
    auto beside = shared(now);  // never beside c now: on a's lane
    REQUIRE(beside.ok());
    CHECK(beside->lane().name == a->lane().name);
  }
  c.reset();

  // With b beside it, a's upgrade cannot finish now; it gives up at its
  // deadline still holding the lane shared.
  absl::Status late = a->Upgrade(now, absl::Seconds(1));
  CHECK(late.code() == absl::StatusCode::kDeadlineExceeded);
  CHECK_FALSE(a->UpgradePending());
  CHECK(pool.Busy() == 1);

  // Waiting for b: new shared leases avoid the lane; a second upgrade on
  // it is refused at once (both waiting for the other would never end).
  absl::Status upgraded = absl::UnknownError("not yet");
  std::thread up([&] { upgraded = a->Upgrade(bg, absl::Seconds(30)); });
  const absl::Time give_up = absl::Now() + absl::Seconds(10);
  while (!b->UpgradePending() && absl::Now() < give_up) std::this_thread::yield();
  REQUIRE(b->UpgradePending());
  auto elsewhere = shared(now);
  REQUIRE(elsewhere.ok());
  CHECK(elsewhere->lane().name != a->lane().name);
  CHECK(b->Upgrade(now, absl::Seconds(1)).code() == absl::StatusCode::kFailedPrecondition);
  b.reset();
  up.join();
  CHECK(upgraded.ok());
  // Now a holds its lane alone: nothing else joins it, not even shared.
  std::optional<LaneLease> other(std::move(*elsewhere));
  auto full = pool.Acquire(BackendKind::kCuda, now, absl::Seconds(1), LaneUse::kShared);
  REQUIRE(full.ok());
  CHECK(full->lane().name == other->lane().name);
  a.reset();
  CHECK(pool.Busy() == 1);
}

TEST_CASE("a lease steps aside for timing and comes back to its own lane, shared or alone", "[lanes]") {
  FakeClock clock;  // the pool's: waits are summed on it
  LanePoolOptions o;
  o.verify_slots_per_gpu = 2;
  o.clock = &clock;
  std::vector<absl::Duration> idle;  // busy periods, as the pool reports them
  o.on_idle = [&](const Lane&, absl::Duration d) { idle.push_back(d); };
  LanePool pool({{BackendKind::kCuda, 0, "cuda:0"}, {BackendKind::kCuda, 1, "cuda:1"}}, o);
  RequestContext now(&clock, clock.Now());  // no waiting
  const RequestContext& bg = RequestContext::Background();
  auto shared = [&](const RequestContext& c) {
    return pool.Acquire(BackendKind::kCuda, c, absl::Seconds(1), LaneUse::kShared);
  };
  std::optional<LaneLease> a(*shared(bg));
  std::optional<LaneLease> other(*shared(bg));  // the other lane
  REQUIRE(a->lane().name != other->lane().name);
  CHECK_FALSE(a->TimingWaiting());

  // Timing waits for a lane: its window is the lane that empties soonest
  // (a tie: the first), and only the verification there is told.
  absl::Status timed = absl::UnknownError("not yet");
  std::string timed_on;
  std::thread timing([&] {
    auto lease = pool.Acquire(BackendKind::kCuda, bg, absl::Seconds(30));
    timed = lease.status();
    if (lease.ok()) timed_on = lease->lane().name;
  });
  const absl::Time give_up = absl::Now() + absl::Seconds(10);
  while (!a->TimingWaiting() && absl::Now() < give_up) std::this_thread::yield();
  REQUIRE(a->TimingWaiting());
  CHECK_FALSE(other->TimingWaiting());

  // a steps aside: its lane is empty, and timing takes it alone. (What
  // held it up is summed on the pool's clock.)
  clock.Advance(absl::Seconds(3));
  a->StepAside();
  CHECK(a->aside());
  a->StepAside();  // once is enough
  timing.join();
  REQUIRE(timed.ok());
  CHECK(timed_on == a->lane().name);
  CHECK_FALSE(a->TimingWaiting());
  CHECK(pool.Busy() == 1);  // timing's lease has ended; `other` still holds its lane
  CHECK(idle.size() == 2);  // a's period, then timing's, on a's lane
  CHECK(pool.Waits().timing_behind_verifications == absl::Seconds(3));

  // Coming back waits while its lane is held alone (and counts as waiting);
  // a new verification meanwhile goes to the other lane.
  std::optional<LaneLease> alone(*pool.Acquire(BackendKind::kCuda, bg, absl::Seconds(1)));  // a's lane again
  REQUIRE(alone->lane().name == a->lane().name);
  absl::Status back = absl::UnknownError("not yet");
  std::thread rejoin([&] { back = a->Rejoin(LaneUse::kShared, bg, absl::Seconds(30)); });
  while (pool.Waiting() == 0 && absl::Now() < give_up) std::this_thread::yield();
  REQUIRE(pool.Waiting() == 1);
  {
    auto fresh = shared(now);
    REQUIRE(fresh.ok());
    CHECK(fresh->lane().name == other->lane().name);
  }
  clock.Advance(absl::Seconds(2));
  alone.reset();
  rejoin.join();
  REQUIRE(back.ok());
  CHECK(pool.Waits().verification_behind_timing == absl::Seconds(2));
  CHECK(pool.Waits().timing_behind_starts == absl::ZeroDuration());
  CHECK_FALSE(a->aside());
  CHECK(pool.Busy() == 2);
  // Back beside nothing on its lane: not shared since it came back.
  CHECK_FALSE(a->SharedWithOthers());

  // Aside again, it comes back alone (a kept pair's measurement): that
  // waits until the lane is empty, and nothing joins it then.
  a->StepAside();
  std::optional<LaneLease> beside(*shared(bg));
  REQUIRE(beside->lane().name == a->lane().name);
  CHECK(a->Rejoin(LaneUse::kExclusive, now, absl::Seconds(1)).code() == absl::StatusCode::kDeadlineExceeded);
  CHECK(a->aside());  // an error leaves it aside
  beside.reset();
  REQUIRE(a->Rejoin(LaneUse::kExclusive, now, absl::Seconds(1)).ok());
  auto joined = shared(now);
  REQUIRE(joined.ok());
  CHECK(joined->lane().name == other->lane().name);
  a.reset();
  CHECK(pool.Busy() == 1);  // `other` and `joined`, on the other lane
  // A lease that ends aside lets go of nothing twice.
  other->StepAside();
  other.reset();
  CHECK(pool.Busy() == 1);  // `joined`
}

TEST_CASE("timing holds verifications back only once a window opens: enough of it waits, or it waited long enough",
          "[lanes]") {
  FakeClock clock;
  LanePoolOptions o;
  o.verify_slots_per_gpu = 4;
  o.timing_batch = 2;
  o.timing_delay = absl::Seconds(5);
  o.clock = &clock;
  LanePool pool({{BackendKind::kCuda, 0, "cuda:0"}}, o);
  RequestContext now(&clock, clock.Now());  // no waiting
  const RequestContext& bg = RequestContext::Background();
  auto shared = [&](const RequestContext& c, LaneUse use = LaneUse::kShared) {
    return pool.Acquire(BackendKind::kCuda, c, absl::Seconds(1), use);
  };
  auto eventually = [](auto done) {
    const absl::Time give_up = absl::Now() + absl::Seconds(10);
    while (!done() && absl::Now() < give_up) std::this_thread::yield();
    return done();
  };
  // A lane nobody holds is taken at once, window or not.
  CHECK(pool.Acquire(BackendKind::kCuda, now, absl::Seconds(1)).ok());

  std::optional<LaneLease> a(*shared(bg));
  std::vector<std::thread> timings;
  std::atomic<int> timed{0};
  auto time_one = [&] {
    timings.emplace_back([&] {
      auto lease = pool.Acquire(BackendKind::kCuda, bg, absl::Seconds(30));
      if (lease.ok()) ++timed;
    });
  };
  time_one();
  REQUIRE(eventually([&] { return pool.Waiting() == 1; }));
  // One measurement waits, less than the delay: verifications go on, and
  // are not asked to step aside.
  CHECK_FALSE(a->TimingWaiting());
  std::optional<LaneLease> b(*shared(now));
  CHECK(shared(now, LaneUse::kStart).ok());
  // A second one makes the batch: the window opens.
  time_one();
  REQUIRE(eventually([&] { return a->TimingWaiting(); }));
  CHECK(b->TimingWaiting());
  CHECK(shared(now).status().code() == absl::StatusCode::kDeadlineExceeded);
  CHECK(shared(now, LaneUse::kStart).status().code() == absl::StatusCode::kDeadlineExceeded);
  a->StepAside();
  b.reset();
  for (auto& t : timings) t.join();
  timings.clear();
  CHECK(timed == 2);
  // Both have had the lane: the window is closed, a comes back.
  REQUIRE(a->Rejoin(LaneUse::kShared, now, absl::Seconds(1)).ok());

  // Alone, a measurement opens the window once it has waited the delay.
  time_one();
  REQUIRE(eventually([&] { return pool.Waiting() == 1; }));
  CHECK_FALSE(a->TimingWaiting());
  clock.Advance(absl::Seconds(5));
  REQUIRE(eventually([&] { return a->TimingWaiting(); }));
  a.reset();
  for (auto& t : timings) t.join();
  CHECK(timed == 3);
  CHECK(shared(now).ok());
}

// One worker over a host's GPUs (issue 42): a measurement waiting empties
// one lane, not the backend; the other GPUs go on taking verifications, as
// they would in separate workers.
TEST_CASE("a timing window is one lane's: the host's other GPUs go on verifying", "[lanes]") {
  FakeClock clock;
  LanePoolOptions o;
  o.verify_slots_per_gpu = 4;
  o.clock = &clock;  // timing_batch 1: a window opens at the first wait
  LanePool pool({{BackendKind::kCuda, 0, "cuda:0"}, {BackendKind::kCuda, 1, "cuda:1"}}, o);
  RequestContext now(&clock, clock.Now());  // no waiting
  const RequestContext& bg = RequestContext::Background();
  auto on = [&](size_t lane, const RequestContext& c) {
    return pool.AcquireOn(lane, c, absl::Seconds(1), LaneUse::kShared);
  };
  auto eventually = [](auto done) {
    const absl::Time give_up = absl::Now() + absl::Seconds(10);
    while (!done() && absl::Now() < give_up) std::this_thread::yield();
    return done();
  };
  // Lane 0 holds one verification, lane 1 two: lane 0 empties soonest.
  std::optional<LaneLease> a(*on(0, bg));
  std::optional<LaneLease> b1(*on(1, bg)), b2(*on(1, bg));
  std::atomic<int> timed_on{-1};
  std::atomic<bool> release{false};
  std::thread timing([&] {
    auto lease = pool.Acquire(BackendKind::kCuda, bg, absl::Seconds(30));
    if (!lease.ok()) return;
    timed_on = lease->lane().index;
    while (!release) std::this_thread::yield();
  });
  REQUIRE(eventually([&] { return a->TimingWaiting(); }));
  CHECK_FALSE(b1->TimingWaiting());  // lane 1 is not asked to step aside
  CHECK(on(0, now).status().code() == absl::StatusCode::kDeadlineExceeded);
  auto taken = pool.Acquire(BackendKind::kCuda, now, absl::Seconds(1), LaneUse::kShared);
  REQUIRE(taken.ok());  // a new verification goes on, on lane 1
  CHECK(taken->lane().index == 1);
  std::optional<LaneLease> c(std::move(*taken));
  CHECK(pool.AcquireOn(1, now, absl::Seconds(1), LaneUse::kStart).ok());
  a.reset();
  REQUIRE(eventually([&] { return timed_on.load() == 0; }));
  CHECK(on(1, now).ok());  // lane 1 verifies while lane 0 times
  release = true;
  timing.join();
  CHECK(on(0, now).ok());  // the window closed with its measurement

  SECTION("another lane freeing first takes the measurement, and the window's lane reopens") {
    b1.reset();
    b2.reset();
    std::optional<LaneLease> x(*on(0, bg));
    std::optional<LaneLease> y1(*on(1, bg)), y2(*on(1, bg));  // and c: lane 1 holds three
    release = false;
    timed_on = -1;
    std::thread second([&] {
      auto lease = pool.Acquire(BackendKind::kCuda, bg, absl::Seconds(30));
      if (!lease.ok()) return;
      timed_on = lease->lane().index;
      while (!release) std::this_thread::yield();
    });
    REQUIRE(eventually([&] { return x->TimingWaiting(); }));  // its window is lane 0's
    c.reset();
    y1.reset();
    y2.reset();
    REQUIRE(eventually([&] { return timed_on.load() == 1; }));
    CHECK_FALSE(x->TimingWaiting());
    CHECK(on(0, now).ok());
    release = true;
    second.join();
  }
}

// Host lanes are CPUs of one machine: timing on one is disturbed by work on
// the others, so a window holds every host lane back, as before GPU windows
// became one lane's.
TEST_CASE("a timing window on a host lane holds every host lane back until its measurement ends", "[lanes]") {
  FakeClock clock;
  LanePoolOptions o;
  o.clock = &clock;
  LanePool pool({{BackendKind::kHost, 0, "host:0"}, {BackendKind::kHost, 1, "host:1"}}, o);
  RequestContext now(&clock, clock.Now());
  const RequestContext& bg = RequestContext::Background();
  auto eventually = [](auto done) {
    const absl::Time give_up = absl::Now() + absl::Seconds(10);
    while (!done() && absl::Now() < give_up) std::this_thread::yield();
    return done();
  };
  std::optional<LaneLease> a(*pool.AcquireOn(0, bg, absl::Seconds(1), LaneUse::kShared));
  std::optional<LaneLease> b(*pool.AcquireOn(1, bg, absl::Seconds(1), LaneUse::kShared));
  std::atomic<int> timed_on{-1};
  std::atomic<bool> release{false};
  std::thread timing([&] {
    auto lease = pool.Acquire(BackendKind::kHost, bg, absl::Seconds(30));
    if (!lease.ok()) return;
    timed_on = lease->lane().index;
    while (!release) std::this_thread::yield();
  });
  REQUIRE(eventually([&] { return a->TimingWaiting(); }));
  CHECK(b->TimingWaiting());  // both host lanes are asked to step aside
  clock.Advance(absl::Seconds(2));
  b.reset();
  REQUIRE(eventually([&] { return timed_on.load() == 1; }));
  // The window it waited in covers the lane it took: its emptying counts.
  CHECK(pool.Waits().window_emptying == absl::Seconds(2));
  a.reset();
  // While it measures on host:1, host:0 takes no new verification.
  CHECK(pool.AcquireOn(0, now, absl::Seconds(1), LaneUse::kShared).status().code() ==
        absl::StatusCode::kDeadlineExceeded);
  release = true;
  timing.join();
  CHECK(pool.AcquireOn(0, now, absl::Seconds(1), LaneUse::kShared).ok());
}

// Timing as launched is host-bound: the worker's other GPUs stop verifying
// for it, as host lanes do for each other, where a measurement replaying
// graphs leaves them be (the per-lane window above).
TEST_CASE("a measurement timed as launched (kQuiet) holds every lane back and starts once the others only measure",
          "[lanes]") {
  FakeClock clock;
  LanePoolOptions o;
  o.verify_slots_per_gpu = 4;
  o.clock = &clock;
  LanePool pool({{BackendKind::kCuda, 0, "cuda:0"}, {BackendKind::kCuda, 1, "cuda:1"}}, o);
  RequestContext now(&clock, clock.Now());  // no waiting
  const RequestContext& bg = RequestContext::Background();
  auto on = [&](size_t lane, const RequestContext& c, LaneUse use = LaneUse::kShared) {
    return pool.AcquireOn(lane, c, absl::Seconds(1), use);
  };
  auto eventually = [](auto done) {
    const absl::Time give_up = absl::Now() + absl::Seconds(10);
    while (!done() && absl::Now() < give_up) std::this_thread::yield();
    return done();
  };
  std::optional<LaneLease> a(*on(0, bg)), b(*on(1, bg));
  CHECK(pool.Acquire(BackendKind::kCuda, now, absl::Seconds(1), LaneUse::kQuiet).status().code() ==
        absl::StatusCode::kDeadlineExceeded);
  a.reset();
  // Lane 0 is free: a measurement replaying graphs takes it at once, one
  // timed as launched does not while lane 1 verifies.
  CHECK(pool.Acquire(BackendKind::kCuda, now, absl::Seconds(1)).ok());
  CHECK(pool.Acquire(BackendKind::kCuda, now, absl::Seconds(1), LaneUse::kQuiet).status().code() ==
        absl::StatusCode::kDeadlineExceeded);
  CHECK_FALSE(b->TimingWaiting());  // a failed wait leaves nothing held back
  CHECK(on(1, now).ok());

  std::atomic<int> timed_on{-1};
  std::atomic<bool> release{false};
  std::thread timing([&] {
    auto lease = pool.Acquire(BackendKind::kCuda, bg, absl::Seconds(30), LaneUse::kQuiet);
    if (!lease.ok()) return;
    timed_on = lease->lane().index;
    while (!release) std::this_thread::yield();
  });
  REQUIRE(eventually([&] { return b->TimingWaiting(); }));  // lane 1 is asked to step aside
  CHECK(on(1, now).status().code() == absl::StatusCode::kDeadlineExceeded);
  CHECK(on(1, now, LaneUse::kStart).status().code() == absl::StatusCode::kDeadlineExceeded);
  CHECK(on(0, now).status().code() == absl::StatusCode::kDeadlineExceeded);
  b->StepAside();
  REQUIRE(eventually([&] { return timed_on.load() == 0; }));
  // While it measures: lane 1 takes no verification (nor one coming back),
  // but another measurement goes on beside it.
  CHECK(on(1, now).status().code() == absl::StatusCode::kDeadlineExceeded);
  CHECK(b->Rejoin(LaneUse::kShared, now, absl::Seconds(1)).code() == absl::StatusCode::kDeadlineExceeded);
  CHECK(on(1, now, LaneUse::kExclusive).ok());
  release = true;
  timing.join();
  CHECK(b->Rejoin(LaneUse::kShared, now, absl::Seconds(1)).ok());
  CHECK_FALSE(b->TimingWaiting());
  CHECK(on(0, now).ok());
}

TEST_CASE("the pool counts timing windows, how long they stayed open, and how long emptying the GPU took",
          "[lanes]") {
  FakeClock clock;
  LanePoolOptions o;
  o.verify_slots_per_gpu = 4;
  o.clock = &clock;  // timing_batch 1: a window opens at the first wait
  LanePool pool({{BackendKind::kCuda, 0, "cuda:0"}}, o);
  const RequestContext& bg = RequestContext::Background();
  auto eventually = [](auto done) {
    const absl::Time give_up = absl::Now() + absl::Seconds(10);
    while (!done() && absl::Now() < give_up) std::this_thread::yield();
    return done();
  };
  std::optional<LaneLease> verification(*pool.Acquire(BackendKind::kCuda, bg, absl::Seconds(1), LaneUse::kShared));
  std::atomic<bool> timed{false}, release{false};
  std::thread timing([&] {
    auto lease = pool.Acquire(BackendKind::kCuda, bg, absl::Seconds(30));
    if (!lease.ok()) return;
    timed = true;
    while (!release) std::this_thread::yield();
  });
  REQUIRE(eventually([&] { return verification->TimingWaiting(); }));
  CHECK(pool.Waits().windows == 1);
  clock.Advance(absl::Seconds(3));  // the verification runs to its next call
  verification.reset();
  REQUIRE(eventually([&] { return timed.load(); }));
  clock.Advance(absl::Seconds(1));  // the measurement
  release = true;
  timing.join();
  const LaneWaits w = pool.Waits();
  CHECK(w.windows == 1);
  CHECK(w.window_emptying == absl::Seconds(3));
  CHECK(w.longest_emptying == absl::Seconds(3));
  CHECK(w.windows_open == absl::Seconds(4));
  CHECK_THAT(w.Describe(), Catch::Matchers::Contains(
                               "1 timing window(s) open 4.0 s, 3.0 s of it emptying the GPU (longest 3.0 s)"));
  // A lane nobody holds is taken at once: no window.
  CHECK(pool.Acquire(BackendKind::kCuda, bg, absl::Seconds(1)).ok());
  CHECK(pool.Waits().windows == 1);
}

}  // namespace
}  // namespace crl
