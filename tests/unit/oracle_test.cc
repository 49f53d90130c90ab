// The oracle's decisions on synthetic samples from a fake worker: no
// processes, no clocks, no sleeps.
#include <catch2/catch.hpp>

#include <deque>
#include <random>

#include "common/clock.h"
#include "services/timing/oracle.h"
#include "services/timing/timing_metrics.h"
#include "services/worker/fake_worker_client.h"

namespace crl::timing {
namespace {

struct Side {
  double device = 1e-3;
  double stream = 1e-3;
  double hidden = 2e-4;   // outside round trip minus device time
  double jitter = 0.01;   // relative lognormal sigma
};

v1::MeasurePairResponse Pairs(Side ref, Side cand, int n, uint64_t seed,
                              const std::string& lane = "cuda:0") {
  std::mt19937_64 rng(seed);
  v1::MeasurePairResponse m;
  m.set_verdict(v1::VERDICT_OK);
  m.set_lane(lane);
  m.set_backend(lane.rfind("host", 0) == 0 ? v1::BACKEND_HOST : v1::BACKEND_CUDA);
  m.set_device_name("NVIDIA H100 80GB HBM3");
  m.set_converged(true);
  for (int i = 0; i < n; ++i) {
    for (auto [side, samples, outs] :
         {std::tuple{ref, m.mutable_reference_samples(), m.mutable_reference_outside_seconds()},
          std::tuple{cand, m.mutable_candidate_samples(), m.mutable_candidate_outside_seconds()}}) {
      std::lognormal_distribution<double> noise(0, side.jitter);
      double f = noise(rng);
      auto* s = samples->Add();
      s->set_device_sync_seconds(side.device * f);
      s->set_stream_event_seconds(side.stream * f);
      s->set_host_seconds(side.device * f);
      outs->Add(side.device * f + side.hidden);
    }
  }
  return m;
}

v1::TimeResponse Time(FakeWorkerClient* w, double best = 0) {
  FakeClock clock;
  TimingOracle oracle(OracleOptions{}, w, &clock);
  v1::TimeRequest req;
  req.mutable_task()->set_path("t");
  req.set_artifact_id(std::string(64, 'a'));
  req.set_best_known_speedup(best);
  auto r = oracle.Time(req, RequestContext::Background());
  REQUIRE(r.ok());
  return *r;
}

bool Has(const v1::TimeResponse& r, v1::Flag f) {
  for (int x : r.flags()) {
    if (x == f) return true;
  }
  return false;
}

TEST_CASE("a clean 2x measurement: speedup, CI, no flags", "[oracle]") {
  FakeWorkerClient w;
  w.Push(Pairs({2e-3, 2e-3}, {1e-3, 1e-3}, 100, 1));
  auto r = Time(&w);
  CHECK(r.verdict() == v1::VERDICT_OK);
  CHECK(r.speedup() == Approx(2.0).epsilon(0.02));
  CHECK(r.speedup_ci_low() < r.speedup());
  CHECK(r.speedup_ci_high() > r.speedup());
  CHECK(r.flags_size() == 0);
  CHECK(r.stop_reason() == v1::STOP_REASON_CONVERGED);
  CHECK(w.pair_requests().size() == 1);
  CHECK(w.pair_requests()[0].checked_elements() == 0);  // the worker's default

  FakeWorkerClient sized;
  sized.Push(Pairs({2e-3, 2e-3}, {1e-3, 1e-3}, 100, 1));
  FakeClock clock;
  OracleOptions options;
  options.checked_elements = 4096;
  v1::TimeRequest req;
  req.mutable_task()->set_path("t");
  req.set_artifact_id(std::string(64, 'a'));
  REQUIRE(TimingOracle(options, &sized, &clock).Time(req, RequestContext::Background()).ok());
  REQUIRE(sized.pair_requests().size() == 1);
  CHECK(sized.pair_requests()[0].checked_elements() == 4096);
}

TEST_CASE("side-stream work shows as a stream/device gap and is flagged", "[oracle]") {
  FakeWorkerClient w;
  w.Push(Pairs({2e-3, 1.99e-3}, {1e-3, 0.05e-3}, 100, 2));
  auto r = Time(&w);
  CHECK(Has(r, v1::FLAG_SIDE_STREAM));

  // Numbers seen on an H200: a 30 us honest kernel shows the ordinary ~7 us
  // synchronization gap; the shipped diag_matmul side-stream hack does not.
  FakeWorkerClient honest;
  honest.Push(Pairs({307e-6, 300e-6}, {21e-6, 14e-6}, 100, 20));
  honest.Push(Pairs({307e-6, 300e-6}, {21e-6, 14e-6}, 100, 21));  // 14x: re-measured
  r = Time(&honest);
  CHECK_FALSE(Has(r, v1::FLAG_SIDE_STREAM));
  FakeWorkerClient hack;
  hack.Push(Pairs({307e-6, 300e-6}, {34.3e-6, 5.5e-6}, 100, 22));
  r = Time(&hack);
  CHECK(Has(r, v1::FLAG_SIDE_STREAM));
  FakeWorkerClient big_ref_gap;  // diag_matmul's reference itself shows a 93 us gap
  big_ref_gap.Push(Pairs({305e-6, 212e-6}, {39.6e-6, 11.6e-6}, 100, 24));
  r = Time(&big_ref_gap);
  CHECK(Has(r, v1::FLAG_SIDE_STREAM));
  FakeWorkerClient small_hack;  // conv1d's: 7.4 us on its stream, 25.6 us in all
  small_hack.Push(Pairs({26.7e-6, 19.7e-6}, {25.6e-6, 7.4e-6}, 100, 23));
  r = Time(&small_hack);
  CHECK(Has(r, v1::FLAG_SIDE_STREAM));
}

TEST_CASE("noise is re-measured once, longer, then flagged where the speedup stays loose", "[oracle]") {
  FakeWorkerClient w;
  Side noisy{1e-3, 1e-3, 2e-4, 1.0};
  w.Push(Pairs({2e-3, 2e-3}, noisy, 100, 3));
  w.Push(Pairs({2e-3, 2e-3}, noisy, 100, 4));
  auto r = Time(&w);
  REQUIRE(w.pair_requests().size() == 2);
  // 4x longer: the pairs, and the budget up to its 60 s ceiling (30 s by default).
  CHECK(w.pair_requests()[0].budget_seconds() == Approx(30));
  CHECK(w.pair_requests()[1].budget_seconds() == Approx(60));
  CHECK(w.pair_requests()[1].max_pairs() == 4 * w.pair_requests()[0].max_pairs());
  CHECK(Has(r, v1::FLAG_NOISY));
  CHECK(r.measurements() == 2);

  // Calls spread by 20 % (a loaded 2-core machine), yet 400 pairs pin the
  // speedup to a few percent: no flag, counted at the interval's end nearest
  // 1 (as a NOISY reward is paid), with the noise said.
  FakeWorkerClient pinned;
  Side spread{1e-3, 1e-3, 2e-4, 0.3};
  pinned.Push(Pairs({2e-3, 2e-3, 2e-4, 0.3}, spread, 100, 30));
  pinned.Push(Pairs({2e-3, 2e-3, 2e-4, 0.3}, spread, 400, 31));
  r = Time(&pinned);
  CHECK(pinned.pair_requests().size() == 2);
  CHECK_FALSE(Has(r, v1::FLAG_NOISY));
  CHECK(r.speedup() == r.speedup_ci_low());
  CHECK(r.speedup() < 2);
  CHECK(r.speedup() > 1.8);
  bool said = false;
  for (const auto& e : r.flag_evidence()) said = said || e.find("noisy calls, speedup pinned down") == 0;
  CHECK(said);


  // What the lane time of both measurements adds up to.
  FakeWorkerClient held;
  v1::MeasurePairResponse first = Pairs({2e-3, 2e-3}, noisy, 100, 3), second = Pairs({2e-3, 2e-3}, noisy, 100, 4);
  first.set_lane_seconds(2.5);
  second.set_lane_seconds(1.25);
  held.Push(first);
  held.Push(second);
  r = Time(&held);
  CHECK(r.measurements() == 2);
  CHECK(r.measure_seconds() == Approx(3.75));

  FakeWorkerClient calm_second;
  calm_second.Push(Pairs({2e-3, 2e-3}, noisy, 100, 5));
  calm_second.Push(Pairs({2e-3, 2e-3}, {1e-3, 1e-3}, 100, 6));
  r = Time(&calm_second);
  CHECK(calm_second.pair_requests().size() == 2);
  CHECK_FALSE(Has(r, v1::FLAG_NOISY));
}

TEST_CASE("implausible jumps are re-measured; the two must agree, and the lower counts", "[oracle]") {
  FakeWorkerClient agree;
  agree.Push(Pairs({20e-3, 20e-3}, {1e-3, 1e-3}, 100, 7));
  agree.Push(Pairs({20e-3, 20e-3}, {1.02e-3, 1.02e-3}, 100, 8, "cuda:1"));
  auto r = Time(&agree);
  CHECK(agree.pair_requests().size() == 2);
  CHECK_FALSE(Has(r, v1::FLAG_IMPLAUSIBLE_JUMP));
  CHECK(r.speedup() == Approx(20 / 1.02).epsilon(0.02));

  // Two honest host measurements of a fast candidate differ by this much
  // (15.8x then 13x on the 2-core machine): the same candidate, rewarded at
  // the lower, not withheld.
  FakeWorkerClient honest;
  honest.Push(Pairs({15.8e-3, 15.8e-3}, {1e-3, 1e-3}, 100, 16, "host:0"));
  honest.Push(Pairs({13e-3, 13e-3}, {1e-3, 1e-3}, 100, 17, "host:0"));
  r = Time(&honest);
  CHECK_FALSE(Has(r, v1::FLAG_IMPLAUSIBLE_JUMP));
  CHECK(r.speedup() == Approx(13).epsilon(0.02));
  // The times and interval of the measurement that counts.
  CHECK(r.speedup_ci_high() < 15);
  CHECK(r.ref_seconds() == Approx(13e-3).epsilon(0.02));


  FakeWorkerClient disagree;
  disagree.Push(Pairs({20e-3, 20e-3}, {1e-3, 1e-3}, 100, 9));
  disagree.Push(Pairs({20e-3, 20e-3}, {2e-3, 2e-3}, 100, 10, "cuda:1"));
  r = Time(&disagree);
  CHECK(Has(r, v1::FLAG_IMPLAUSIBLE_JUMP));

  // Noisy measurements widen the band by their own intervals, up to what
  // they show: 2x apart is still a disagreement at 5% jitter.
  FakeWorkerClient noisy;
  noisy.Push(Pairs({20e-3, 20e-3, 2e-4, 0.05}, {1e-3, 1e-3, 2e-4, 0.05}, 100, 18));
  noisy.Push(Pairs({20e-3, 20e-3, 2e-4, 0.05}, {2e-3, 2e-3, 2e-4, 0.05}, 100, 19));
  r = Time(&noisy);
  CHECK(Has(r, v1::FLAG_IMPLAUSIBLE_JUMP));

  FakeWorkerClient vs_best;  // 3x when the best so far is 1.2x
  vs_best.Push(Pairs({3e-3, 3e-3}, {1e-3, 1e-3}, 100, 11));
  vs_best.Push(Pairs({3e-3, 3e-3}, {2e-3, 2e-3}, 100, 12));
  r = Time(&vs_best, 1.2);
  CHECK(vs_best.pair_requests().size() == 2);
  CHECK(Has(r, v1::FLAG_IMPLAUSIBLE_JUMP));

  // The re-measurement's output checks count as much as the first's.
  FakeWorkerClient wrong_later;
  wrong_later.Push(Pairs({20e-3, 20e-3}, {1e-3, 1e-3}, 100, 20));
  auto later = Pairs({20e-3, 20e-3}, {1e-3, 1e-3}, 100, 21);
  later.set_output_checks(20);
  later.set_output_mismatches(2);
  later.set_output_mismatch_detail("pair 3: y[0]: got 0, want 1");
  wrong_later.Push(later);
  r = Time(&wrong_later);
  CHECK(Has(r, v1::FLAG_WRITE_AFTER_RETURN));
  CHECK_FALSE(Has(r, v1::FLAG_IMPLAUSIBLE_JUMP));
}

TEST_CASE("wrong timed outputs, hidden time and impossible speed are flagged", "[oracle]") {
  FakeWorkerClient w;
  auto m = Pairs({2e-3, 2e-3}, {1e-3, 1e-3}, 100, 13);
  m.set_output_checks(20);
  m.set_output_mismatches(3);
  m.set_output_mismatch_detail("pair 5: y[0]: got 0, want 1");
  w.Push(m);
  auto r = Time(&w);
  CHECK(Has(r, v1::FLAG_WRITE_AFTER_RETURN));

  FakeWorkerClient hidden;  // 5 ms of work outside the reported window
  hidden.Push(Pairs({2e-3, 2e-3}, {1e-3, 1e-3, 5.2e-3}, 100, 14));
  r = Time(&hidden);
  CHECK(Has(r, v1::FLAG_TIMER_MISMATCH));

  FakeWorkerClient floor;  // 1 GB in 10 us on an H100 is impossible
  auto f = Pairs({2e-3, 2e-3}, {1e-5, 1e-5}, 100, 15);
  f.set_task_bytes(1e9);
  floor.Push(f);
  floor.Push(f);  // the jump re-measure agrees
  r = Time(&floor);
  CHECK(Has(r, v1::FLAG_BELOW_PHYSICAL_FLOOR));
}

TEST_CASE("failures pass through as verdicts; unverified candidates are not timed", "[oracle]") {
  FakeWorkerClient w;
  v1::MeasurePairResponse bad;
  bad.set_verdict(v1::VERDICT_INFRA_ERROR);
  bad.add_messages("reference runner: sandbox setup failed");
  w.Push(bad);
  auto r = Time(&w);
  CHECK(r.verdict() == v1::VERDICT_INFRA_ERROR);
  CHECK(r.stop_reason() == v1::STOP_REASON_ERROR);

  FakeWorkerClient unverified;
  v1::EvaluateResponse wrong;
  wrong.set_verdict(v1::VERDICT_WRONG_ANSWER);
  unverified.Push(wrong);
  FakeClock clock;
  TimingOracle oracle(OracleOptions{}, &unverified, &clock);
  v1::TimeRequest req;
  req.mutable_task()->set_path("t");
  req.mutable_candidate()->set_source("int x;");
  auto t = oracle.Time(req, RequestContext::Background());
  REQUIRE(t.ok());
  CHECK(t->verdict() == v1::VERDICT_WRONG_ANSWER);
  CHECK(unverified.pair_requests().size() == 0);

  v1::TimeRequest empty;
  CHECK(oracle.Time(empty, RequestContext::Background()).status().code() == absl::StatusCode::kInvalidArgument);
}

TEST_CASE("verified sides kept by the worker go to the first measurement only", "[oracle]") {
  Side noisy{1e-3, 1e-3, 2e-4, 0.5};
  // A TimeRequest that names them: the first MeasurePair takes them, the
  // noise re-measurement starts its own.
  FakeWorkerClient w;
  v1::MeasurePairResponse first = Pairs({2e-3, 2e-3}, noisy, 100, 3);
  first.set_kept_pair_used(true);
  w.Push(first);
  w.Push(Pairs({2e-3, 2e-3}, noisy, 100, 4));
  FakeClock clock;
  TimingOracle oracle(OracleOptions{}, &w, &clock);
  v1::TimeRequest req;
  req.mutable_task()->set_path("t");
  req.set_artifact_id(std::string(64, 'a'));
  req.set_kept_pair("kept-1");
  auto r = oracle.Time(req, RequestContext::Background());
  REQUIRE(r.ok());
  REQUIRE(w.pair_requests().size() == 2);
  CHECK(w.pair_requests()[0].kept_pair() == "kept-1");
  CHECK(w.pair_requests()[1].kept_pair().empty());
  CHECK(r->kept_pair_used());

  // A candidate the oracle verifies itself asks the worker to keep them.
  FakeWorkerClient built;
  v1::EvaluateResponse ok;
  ok.set_verdict(v1::VERDICT_OK);
  ok.set_artifact_id(std::string(64, 'b'));
  ok.set_kept_pair("kept-2");
  built.Push(ok);
  built.Push(Pairs({2e-3, 2e-3}, {1e-3, 1e-3}, 100, 5));
  v1::TimeRequest source;
  source.mutable_task()->set_path("t");
  source.mutable_candidate()->set_source("int x;");
  TimingOracle verifying(OracleOptions{}, &built, &clock);
  r = verifying.Time(source, RequestContext::Background());
  REQUIRE(r.ok());
  REQUIRE(built.evaluate_requests().size() == 1);
  CHECK(built.evaluate_requests()[0].keep_for_timing_seconds() == OracleOptions{}.keep_verified_seconds);
  REQUIRE(built.pair_requests().size() == 1);
  CHECK(built.pair_requests()[0].kept_pair() == "kept-2");
  CHECK(built.pair_requests()[0].candidate_artifact_id() == std::string(64, 'b'));
  CHECK_FALSE(r->kept_pair_used());
}

TEST_CASE("the oracle's metrics count results, flags, stop reasons and re-measurements",
          "[oracle]") {
  prometheus::Registry registry;
  TimingMetrics metrics(&registry);
  FakeClock clock;
  FakeWorkerClient w;
  Side noisy{1e-3, 1e-3, 2e-4, 0.5};
  w.Push(Pairs({2e-3, 2e-3}, noisy, 100, 30));
  w.Push(Pairs({2e-3, 2e-3}, noisy, 100, 31));
  TimingOracle oracle(OracleOptions{}, &w, &clock, &metrics);
  v1::TimeRequest req;
  req.mutable_task()->set_path("t");
  req.set_artifact_id(std::string(64, 'a'));
  REQUIRE(oracle.Time(req, RequestContext::Background()).ok());
  CHECK(metrics.results.Add({{"verdict", "ok"}}).Value() == 1);
  CHECK(metrics.flags.Add({{"flag", "noisy"}}).Value() == 1);
  CHECK(metrics.remeasurements.Add({{"cause", "noise"}}).Value() == 1);
  CHECK(metrics.stop_reasons.Add({{"reason", "converged"}}).Value() +
            metrics.stop_reasons.Add({{"reason", "budget"}}).Value() ==
        1);
  CHECK(metrics.flags.Add({{"flag", "side_stream"}}).Value() == 0);
}

}  // namespace
}  // namespace crl::timing
