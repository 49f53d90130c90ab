// The orchestrator's worker pool (services/orchestrator/worker_pool.h): the
// least-busy worker, slots kept while a verified candidate is timed there,
// and a worker's share sized by the lanes it reports.
#include "services/orchestrator/worker_pool.h"

#include <catch2/catch.hpp>

#include "common/clock.h"
#include "services/worker/fake_worker_client.h"

namespace crl::orchestrator {
namespace {

v1::EvaluateResponse Verified() {
  v1::EvaluateResponse r;
  r.set_verdict(v1::VERDICT_OK);
  return r;
}

struct PoolRig {
  FakeClock clock;
  FakeWorkerClient w1, w2;
  WorkerPool pool{{{"w1", &w1}, {"w2", &w2}}, 2, &clock};
  RequestContext context{&clock, clock.MonotonicNow() + absl::Seconds(5)};
};

TEST_CASE("a verified candidate keeps its worker busy while it is timed there", "[orchestrator][pool]") {
  PoolRig r;
  for (auto* w : {&r.w1, &r.w2}) {
    for (int i = 0; i < 4; ++i) w->Push(Verified());
  }
  WorkerPool::Lease lane;
  auto first = r.pool.Evaluate(v1::EvaluateRequest(), {}, r.context, &lane);
  REQUIRE(first.ok());
  CHECK(first->worker == "w1");
  CHECK(lane.held());
  CHECK(r.pool.in_flight() == 1);
  // The next candidate goes to the idle worker, not behind the timing.
  auto second = r.pool.Evaluate(v1::EvaluateRequest(), {}, r.context);
  REQUIRE(second.ok());
  CHECK(second->worker == "w2");
  CHECK(r.pool.in_flight() == 1);  // no lease asked: released at once

  SECTION("released when the timing ends") {
    lane.Release();
    CHECK_FALSE(lane.held());
    CHECK(r.pool.in_flight() == 0);
    lane.Release();  // twice is once
    CHECK(r.pool.in_flight() == 0);
  }
  SECTION("a lease moved is released once, by its last holder") {
    WorkerPool::Lease moved = std::move(lane);
    CHECK_FALSE(lane.held());  // NOLINT(bugprone-use-after-move): the moved-from state is the point
    CHECK(moved.held());
    { WorkerPool::Lease end = std::move(moved); }
    CHECK(r.pool.in_flight() == 0);
  }
  SECTION("a retry through the same lease gives the first slot back") {
    auto again = r.pool.Evaluate(v1::EvaluateRequest(), {"w1"}, r.context, &lane);
    REQUIRE(again.ok());
    CHECK(again->worker == "w2");
    CHECK(r.pool.in_flight() == 1);
  }
  SECTION("a full worker is not picked while the other has room") {
    WorkerPool::Lease second_lane;
    REQUIRE(r.pool.Evaluate(v1::EvaluateRequest(), {}, r.context, &second_lane).ok());
    WorkerPool::Lease third_lane;
    auto third = r.pool.Evaluate(v1::EvaluateRequest(), {}, r.context, &third_lane);
    REQUIRE(third.ok());
    CHECK(r.pool.in_flight() == 3);
    // w1 and w2 each hold one or two; max 2 per worker: one more fits.
    WorkerPool::Lease fourth_lane;
    REQUIRE(r.pool.Evaluate(v1::EvaluateRequest(), {}, r.context, &fourth_lane).ok());
    CHECK(r.pool.in_flight() == 4);
  }
}

TEST_CASE("an evaluation that failed keeps no slot", "[orchestrator][pool]") {
  PoolRig r;
  r.w1.Push(absl::StatusOr<v1::EvaluateResponse>(absl::UnavailableError("gone")));
  WorkerPool::Lease lane;
  auto res = r.pool.Evaluate(v1::EvaluateRequest(), {}, r.context, &lane);
  REQUIRE(res.ok());
  CHECK_FALSE(res->response.ok());
  CHECK_FALSE(lane.held());
  CHECK(r.pool.in_flight() == 0);
}

TEST_CASE("a worker with more lanes takes more candidates once it has said so", "[orchestrator][pool]") {
  PoolRig r;
  v1::WorkerInfo eight;
  for (int i = 0; i < 8; ++i) eight.add_lanes("cuda:" + std::to_string(i));
  r.w1.SetInfo(eight);
  CHECK(r.pool.capacity("w1") == 2);  // not asked yet: one lane
  for (int i = 0; i < 20; ++i) r.w1.Push(Verified());
  REQUIRE(r.pool.Evaluate(v1::EvaluateRequest(), {}, r.context).ok());
  CHECK(r.pool.capacity("w1") == 16);  // 2 per lane
  CHECK(r.pool.capacity("w2") == 2);   // w2 has not answered yet
  // Sixteen kept at once on w1 before w2 (one lane, never asked) is needed:
  // picks go to the least busy, so w2 takes its two and w1 the rest.
  std::vector<WorkerPool::Lease> held(18);
  for (size_t i = 0; i < held.size(); ++i) r.w2.Push(Verified());
  int on_w1 = 0;
  for (auto& lease : held) {
    auto res = r.pool.Evaluate(v1::EvaluateRequest(), {}, r.context, &lease);
    REQUIRE(res.ok());
    on_w1 += res->worker == "w1" ? 1 : 0;
  }
  CHECK(on_w1 == 16);
  CHECK(r.pool.in_flight() == 18);
  CHECK(r.pool.capacity("nobody") == 0);
}

TEST_CASE("a worker that names no lanes keeps one lane's share", "[orchestrator][pool]") {
  PoolRig r;
  r.w1.Push(Verified());
  REQUIRE(r.pool.Evaluate(v1::EvaluateRequest(), {}, r.context).ok());
  CHECK(r.pool.capacity("w1") == 2);  // no lanes in its answer: one
}

TEST_CASE("a worker that cannot say its lanes is asked again after the cool-off, not every evaluation",
          "[orchestrator][pool]") {
  PoolRig r;
  r.w1.SetInfo(absl::UnavailableError("restarting"));
  for (int i = 0; i < 10; ++i) r.w1.Push(Verified());
  for (int i = 0; i < 3; ++i) REQUIRE(r.pool.Evaluate(v1::EvaluateRequest(), {"w2"}, r.context).ok());
  CHECK(r.w1.info_calls() == 1);
  CHECK(r.pool.capacity("w1") == 2);  // one lane's share meanwhile
  v1::WorkerInfo four;
  for (int i = 0; i < 4; ++i) four.add_lanes("cuda:" + std::to_string(i));
  r.w1.SetInfo(four);
  r.clock.Advance(absl::Seconds(11));  // past the pool's 10 s cool-off
  const RequestContext later(&r.clock, r.clock.MonotonicNow() + absl::Seconds(5));
  REQUIRE(r.pool.Evaluate(v1::EvaluateRequest(), {"w2"}, later).ok());
  CHECK(r.w1.info_calls() == 2);
  CHECK(r.pool.capacity("w1") == 8);

  // An older worker without the call keeps one lane's share, asked once.
  r.w2.SetInfo(absl::UnimplementedError("unknown method GetWorkerInfo"));
  for (int i = 0; i < 3; ++i) r.w2.Push(Verified());
  for (int i = 0; i < 3; ++i) REQUIRE(r.pool.Evaluate(v1::EvaluateRequest(), {"w1"}, later).ok());
  CHECK(r.w2.info_calls() == 1);
  CHECK(r.pool.capacity("w2") == 2);
}

}  // namespace
}  // namespace crl::orchestrator
