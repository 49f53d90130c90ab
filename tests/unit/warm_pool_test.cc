// The warm pool's decisions with fake processes and a fake clock: a lane is
// filled only once used, every process is handed out once, stale and dead
// ones are dropped, failures back off, and warming waits for the lane like
// verification does (never beside a measurement).
#include "services/worker/lanes/warm_pool.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <functional>
#include <set>

namespace crl {
namespace {

struct FakeProcess {
  int id = 0;
  bool alive = true;
  bool prepared = false;
  bool warmed = false;
  bool Alive() { return alive; }
};

struct Harness {
  FakeClock clock;
  LanePool lanes{{{BackendKind::kHost, 0, "host:0"}, {BackendKind::kCuda, 0, "cuda:0"}},
                 LanePoolOptions{/*verify_slots_per_gpu=*/4, &clock, nullptr}};
  std::atomic<int> spawned{0};
  std::vector<FakeProcess*> made;  // every process started, owned by the pool or a taker
  bool spawn_fails = false;
  bool warm_fails = false;
  std::unique_ptr<WarmPool<FakeProcess>> pool;

  // With `in_steps`, the pool prepares (no lease) and begins every warm-up
  // before awaiting any, as the KernelBench pool does; `events` records
  // each step and how many lanes were held meanwhile.
  std::vector<std::string> events;
  // Called in each process's prepare step, after its event (may be empty).
  std::function<void(FakeProcess*)> on_prepare;
  explicit Harness(int per_host = 2, int per_gpu = 3, bool in_steps = false) {
    WarmPoolOptions o;
    o.per_host_lane = per_host;
    o.per_gpu = per_gpu;
    o.max_idle = absl::Minutes(5);
    o.retry_after_failure = absl::Seconds(30);
    o.lease_wait = absl::Milliseconds(20);
    o.clock = &clock;
    o.start_threads = false;
    WarmPool<FakeProcess>::Steps steps;
    steps.spawn = [this](const Lane&, const RequestContext&, std::string* error) -> std::unique_ptr<FakeProcess> {
      if (spawn_fails) {
        *error = "no interpreter";
        return nullptr;
      }
      auto p = std::make_unique<FakeProcess>();
      p->id = ++spawned;
      made.push_back(p.get());
      events.push_back("spawn " + std::to_string(p->id) + " busy " + std::to_string(lanes.Busy()));
      return p;
    };
    steps.warm = [this](FakeProcess* p, const Lane&, std::string* error) {
      if (warm_fails) {
        *error = "no torch";
        return false;
      }
      p->warmed = true;
      events.push_back("warm " + std::to_string(p->id) + " busy " + std::to_string(lanes.Busy()));
      return true;
    };
    if (in_steps) {
      steps.prepare = [this](FakeProcess* p, std::string*) {
        p->prepared = true;
        events.push_back("prepare " + std::to_string(p->id) + " busy " + std::to_string(lanes.Busy()));
        if (on_prepare) on_prepare(p);
        return true;
      };
      steps.begin = [this](FakeProcess* p, const Lane&, std::string*) {
        events.push_back("begin " + std::to_string(p->id) + " busy " + std::to_string(lanes.Busy()));
        return true;
      };
    }
    pool = std::make_unique<WarmPool<FakeProcess>>(&lanes, std::move(steps), o);
  }
  const Lane& host() const { return lanes.lanes()[0]; }
  const Lane& gpu() const { return lanes.lanes()[1]; }
};

TEST_CASE("a lane is warmed only after its first use, then kept full", "[warm_pool]") {
  Harness h;
  CHECK(h.pool->FillLane(0) == 0);  // nobody asked: no interpreter started
  CHECK(h.spawned == 0);
  CHECK(h.pool->Take(h.host()) == nullptr);  // cold, and the lane is wanted now
  CHECK(h.pool->stats().cold == 1);
  CHECK(h.pool->FillLane(0) == 2);
  CHECK(h.pool->FillLane(0) == 0);  // full
  CHECK(h.pool->stats().idle == 2);
  auto p = h.pool->Take(h.host());
  REQUIRE(p != nullptr);
  CHECK(p->warmed);
  CHECK(h.pool->stats().warm == 1);
  CHECK(h.pool->FillLane(0) == 1);  // topped up
  CHECK(h.pool->FillLane(1) == 0);  // the GPU lane was never used
}

TEST_CASE("every process is handed out once", "[warm_pool]") {
  Harness h;
  h.pool->Take(h.gpu());
  REQUIRE(h.pool->FillLane(1) == 3);
  std::set<int> ids;
  for (int i = 0; i < 3; ++i) {
    auto p = h.pool->Take(h.gpu());
    REQUIRE(p != nullptr);
    ids.insert(p->id);
  }
  CHECK(ids.size() == 3);
  CHECK(h.pool->Take(h.gpu()) == nullptr);  // empty until refilled: never a used one back
  CHECK(h.pool->stats().warm == 3);
  CHECK(h.pool->stats().cold == 2);
}

TEST_CASE("stale processes are dropped; a lane unused for max_idle is not refilled", "[warm_pool]") {
  Harness h;
  h.pool->Take(h.host());
  REQUIRE(h.pool->FillLane(0) == 2);
  h.clock.Advance(absl::Minutes(4));
  CHECK(h.pool->FillLane(0) == 0);  // still fresh, still wanted
  h.clock.Advance(absl::Minutes(2));  // 6 min old, 6 min since the last Take
  CHECK(h.pool->FillLane(0) == 0);
  CHECK(h.pool->stats().idle == 0);
  CHECK(h.pool->stats().dropped == 2);
  CHECK(h.pool->Take(h.host()) == nullptr);  // used again: cold once, then filled again
  CHECK(h.pool->FillLane(0) == 2);
}

TEST_CASE("a process that died while idle is never handed out", "[warm_pool]") {
  Harness h;
  h.pool->Take(h.host());
  REQUIRE(h.pool->FillLane(0) == 2);
  REQUIRE(h.made.size() == 2);
  h.made[0]->alive = false;  // e.g. killed by the OOM killer while waiting
  auto p = h.pool->Take(h.host());
  REQUIRE(p != nullptr);
  CHECK(p->id == 2);
  CHECK(h.pool->stats().dropped == 1);
  CHECK(h.pool->FillLane(0) == 2);
}

TEST_CASE("start-up failures back off instead of spinning", "[warm_pool]") {
  Harness h;
  h.warm_fails = true;
  h.pool->Take(h.host());
  CHECK(h.pool->FillLane(0) == 0);
  CHECK(h.pool->stats().failed == 2);
  const int spawned = h.spawned;
  CHECK(h.pool->FillLane(0) == 0);  // within the back-off: nothing started
  CHECK(h.spawned == spawned);
  h.warm_fails = false;
  h.clock.Advance(absl::Seconds(31));
  h.pool->Take(h.host());  // still wanted
  CHECK(h.pool->FillLane(0) == 2);
  h.spawn_fails = true;
  h.pool->Take(h.host());
  h.pool->Take(h.host());
  h.pool->Take(h.host());
  CHECK(h.pool->FillLane(0) == 0);
  CHECK(h.pool->stats().failed == 3);
}

TEST_CASE("warming waits for the lane: never beside a measurement or on a busy host lane", "[warm_pool]") {
  Harness h;
  h.pool->Take(h.gpu());
  h.pool->Take(h.host());
  const RequestContext& bg = RequestContext::Background();
  {
    auto timing = h.lanes.Acquire(BackendKind::kCuda, bg, absl::Seconds(1), LaneUse::kExclusive);
    REQUIRE(timing.ok());
    CHECK(h.pool->FillLane(1) == 0);  // the GPU is being timed
    auto host = h.lanes.Acquire(BackendKind::kHost, bg, absl::Seconds(1), LaneUse::kExclusive);
    REQUIRE(host.ok());
    CHECK(h.pool->FillLane(0) == 0);  // the host lane's CPU is in use
  }
  {
    // A verification shares the GPU: warming may too.
    auto verify = h.lanes.Acquire(BackendKind::kCuda, bg, absl::Seconds(1), LaneUse::kShared);
    REQUIRE(verify.ok());
    CHECK(h.pool->FillLane(1) == 3);
    CHECK(verify->SharedWithOthers());  // and the verification knows it had company
  }
  CHECK(h.pool->FillLane(0) == 2);
  CHECK(h.lanes.Busy() == 0);
  CHECK(h.lanes.Waiting() == 0);
}

TEST_CASE("on a GPU, processes import off the lane; only their devices come up under its lease", "[warm_pool]") {
  Harness h(/*per_host=*/2, /*per_gpu=*/2, /*in_steps=*/true);
  h.pool->Take(h.gpu());
  const RequestContext& bg = RequestContext::Background();
  {
    // Timing holds the GPU: the processes start and import meanwhile, and
    // wait prepared, without a lease.
    auto timing = h.lanes.Acquire(BackendKind::kCuda, bg, absl::Seconds(1), LaneUse::kExclusive);
    REQUIRE(timing.ok());
    CHECK(h.pool->FillLane(1) == 0);
    CHECK(h.events == std::vector<std::string>{"spawn 1 busy 1", "spawn 2 busy 1", "prepare 1 busy 1",
                                               "prepare 2 busy 1"});
    CHECK(h.pool->stats().idle == 2);
    CHECK(h.pool->FillLane(1) == 0);  // still busy; nothing more started
    CHECK(h.spawned == 2);
    // A request that finds no warm process gets a prepared one rather than
    // starting its own (its device comes up under its own lease).
    auto p = h.pool->Take(h.gpu());
    REQUIRE(p != nullptr);
    CHECK(p->prepared);
    CHECK_FALSE(p->warmed);
    CHECK(h.pool->stats().prepared == 1);
  }
  // The lane is free: the missing one starts and prepares (no lease), then
  // both come up under one start lease, every warm-up asked before any is
  // awaited.
  h.events.clear();
  CHECK(h.pool->FillLane(1) == 2);
  CHECK(h.events == std::vector<std::string>{"spawn 3 busy 0", "prepare 3 busy 0", "begin 2 busy 1",
                                             "begin 3 busy 1", "warm 2 busy 1", "warm 3 busy 1"});
  CHECK(h.lanes.Busy() == 0);
  auto p = h.pool->Take(h.gpu());
  REQUIRE(p != nullptr);
  CHECK(p->warmed);
  CHECK(h.pool->stats().prepared == 1);
  // A host lane's process is its CPU's work: started and warmed under the
  // lane's lease, never prepared off it.
  h.pool->Take(h.host());
  h.events.clear();
  CHECK(h.pool->FillLane(0) == 2);
  CHECK(h.events == std::vector<std::string>{"spawn 4 busy 1", "spawn 5 busy 1", "begin 4 busy 1",
                                             "begin 5 busy 1", "warm 4 busy 1", "warm 5 busy 1"});
}

TEST_CASE("a fill hands each process over as soon as it has imported, not once the whole fill has", "[warm_pool]") {
  Harness h(/*per_host=*/2, /*per_gpu=*/3, /*in_steps=*/true);
  h.pool->Take(h.gpu());  // the lane is wanted from now on
  // A request that comes while the fill's second process still imports.
  std::unique_ptr<FakeProcess> taken;
  h.on_prepare = [&](FakeProcess* p) {
    if (p->id == 2) taken = h.pool->Take(h.gpu());
  };
  CHECK(h.pool->FillLane(1) == 2);  // the other two come up under the lease
  REQUIRE(taken != nullptr);
  CHECK(taken->id == 1);
  CHECK(taken->prepared);
  CHECK_FALSE(taken->warmed);  // its device comes up under its taker's lease
  CHECK(h.pool->stats().prepared == 1);
  CHECK(h.pool->stats().cold == 1);  // only the first Take, before any fill
  CHECK(h.events == std::vector<std::string>{"spawn 1 busy 0", "spawn 2 busy 0", "spawn 3 busy 0",
                                             "prepare 1 busy 0", "prepare 2 busy 0", "prepare 3 busy 0",
                                             "begin 2 busy 1", "begin 3 busy 1", "warm 2 busy 1", "warm 3 busy 1"});
}

}  // namespace
}  // namespace crl
