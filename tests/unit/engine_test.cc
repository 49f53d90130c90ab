// EvalEngine's decisions over fake sessions, lanes, compiler and clock: the
// one pipeline for every task format, without processes, ports or sleeps.
#include <catch2/catch.hpp>

#include <atomic>
#include <optional>
#include <thread>
#include <utility>

#include "absl/strings/match.h"
#include "services/worker/verify/verifier.h"
#include "tests/support/engine_rig.h"

namespace crl {
namespace {

TEST_CASE("a correct candidate passes every trial and leaves nothing running", "[engine]") {
  Rig rig;
  auto r = rig.Evaluate("correct");
  REQUIRE(r.ok());
  CHECK(r->verdict() == v1::VERDICT_OK);
  CHECK(r->correctness().trials() == 5);
  CHECK(r->correctness().trials_passed() == 5);
  CHECK(r->lane() == "host:0");
  CHECK(r->backend() == v1::BACKEND_HOST);
  CHECK(r->custom_kernel());
  CHECK(r->flags_size() == 0);
  REQUIRE(r->messages_size() > 0);
  CHECK(r->messages(0) == "tolerance: float32 atol=0.0001 rtol=0.0001");
  rig.engine->WaitRetired();
  CHECK(rig.format.open_sessions() == 0);
  CHECK(rig.lanes.Busy() == 0);
  CHECK(rig.metrics.lanes_busy.Value() == 0);
  CHECK(rig.Evaluations("ok") == 1);
}

TEST_CASE("a trial where the reference is not finite is skipped and says so", "[engine]") {
  FakeTaskSpec spec;
  spec.nonfinite_alternative = true;
  Rig rig(spec);
  auto r = rig.Evaluate("correct");
  REQUIRE(r.ok());
  CHECK(r->verdict() == v1::VERDICT_OK);
  CHECK(r->correctness().trials() == 4);  // the fifth was skipped
  bool said = false;
  for (const auto& m : r->messages()) said = said || m == "trial 5: skipped (the reference is not finite there)";
  CHECK(said);
}

TEST_CASE("an evaluation answers before its sides have ended; their lane is let go once they have",
          "[engine]") {
  Rig rig;
  rig.format.close_gate().Hold();  // a side's exit that takes its time
  auto r = rig.Evaluate("correct");
  REQUIRE(r.ok());
  CHECK(r->verdict() == v1::VERDICT_OK);
  CHECK(rig.format.open_sessions() == 2);  // answered; both sides still ending
  CHECK(rig.metrics.lanes_busy.Value() == 1);  // the lane counts as busy until they have
  // Nothing takes the lane alone while they end.
  auto alone = rig.lanes.Acquire(BackendKind::kHost, RequestContext::Background(), absl::Milliseconds(50));
  CHECK(alone.status().code() == absl::StatusCode::kDeadlineExceeded);
  rig.format.close_gate().Open();
  rig.engine->WaitRetired();
  CHECK(rig.format.open_sessions() == 0);
  CHECK(rig.lanes.Busy() == 0);
  CHECK(rig.metrics.lanes_busy.Value() == 0);
  CHECK(rig.lanes.Acquire(BackendKind::kHost, RequestContext::Background(), absl::Milliseconds(50)).ok());
}

TEST_CASE("a measurement answers before its sides have ended", "[engine]") {
  Rig rig;
  auto fast = rig.Evaluate("fast");
  REQUIRE(fast.ok());
  rig.engine->WaitRetired();
  rig.format.close_gate().Hold();
  v1::MeasurePairRequest m;
  m.mutable_task()->set_path("task");
  m.set_candidate_artifact_id(fast->artifact_id());
  auto timed = rig.engine->MeasurePair(m, RequestContext::Background());
  REQUIRE(timed.ok());
  CHECK(timed->verdict() == v1::VERDICT_OK);
  CHECK(rig.format.open_sessions() == 2);
  CHECK(rig.lanes.Busy() == 1);  // the lane stays leased until they have ended
  rig.format.close_gate().Open();
  rig.engine->WaitRetired();
  CHECK(rig.format.open_sessions() == 0);
  CHECK(rig.lanes.Busy() == 0);
}

TEST_CASE("a compile verdict ends the evaluation before any lane is taken", "[engine]") {
  Rig rig;
  auto r = rig.Evaluate("compile_error here");
  REQUIRE(r.ok());
  CHECK(r->verdict() == v1::VERDICT_COMPILE_ERROR);
  CHECK(r->compile().verdict() == v1::VERDICT_COMPILE_ERROR);
  CHECK(r->lane().empty());
  CHECK(rig.metrics.lane_busy_seconds.Add({{"lane", "host:0"}}).Value() == 0);

  rig.compiler.set_failure(absl::UnavailableError("sandbox setup failed"));
  r = rig.Evaluate("correct");
  REQUIRE(r.ok());
  CHECK(r->verdict() == v1::VERDICT_INFRA_ERROR);  // the compile tier broke: not the candidate
  CHECK_THAT(r->messages(0), Catch::Contains("sandbox setup failed"));
}

TEST_CASE("wrong outputs, crashes and violations get their own verdicts", "[engine]") {
  Rig rig;
  auto wrong = rig.Evaluate("wrong");
  REQUIRE(wrong.ok());
  CHECK(wrong->verdict() == v1::VERDICT_WRONG_ANSWER);
  CHECK(wrong->correctness().trials_passed() == 0);
  CHECK(wrong->correctness().first_mismatch_output() == "y");
  CHECK(wrong->correctness().first_mismatch_index() == 0);
  CHECK_THAT(wrong->messages(wrong->messages_size() - 1), Catch::Contains("trial 1: output 'y'"));

  auto crash = rig.Evaluate("crash");
  REQUIRE(crash.ok());
  CHECK(crash->verdict() == v1::VERDICT_RUNTIME_ERROR);
  CHECK_THAT(crash->messages(crash->messages_size() - 1), Catch::Contains("candidate crashed"));

  auto violate = rig.Evaluate("violate");
  REQUIRE(violate.ok());
  CHECK(violate->verdict() == v1::VERDICT_WRONG_ANSWER);
  CHECK_THAT(violate->messages(violate->messages_size() - 1), Catch::Contains("modified"));

  auto alias = rig.Evaluate("alias");
  REQUIRE(alias.ok());
  CHECK(alias->verdict() == v1::VERDICT_WRONG_ANSWER);
  CHECK_THAT(alias->messages(alias->messages_size() - 1), Catch::Contains("shares storage"));

  // One output buffer returned by every call: rejected by name, or (when
  // asked) a trust flag that withholds the reward.
  auto reuse = rig.Evaluate("reuse");
  REQUIRE(reuse.ok());
  CHECK(reuse->verdict() == v1::VERDICT_WRONG_ANSWER);
  CHECK(reuse->correctness().trials_passed() == 1);
  CHECK_THAT(reuse->messages(reuse->messages_size() - 1),
             Catch::Contains("trial 2") && Catch::Contains("reuses one output buffer across calls"));
  v1::EvaluateRequest lenient = Rig::Request("reuse");
  lenient.mutable_options()->set_reused_output_as_flag(true);
  auto flagged = rig.engine->Evaluate(lenient, RequestContext::Background());
  REQUIRE(flagged.ok());
  CHECK(flagged->verdict() == v1::VERDICT_OK);
  REQUIRE(flagged->flags_size() == 1);
  CHECK(flagged->flags(0) == v1::FLAG_WRITE_AFTER_RETURN);
  CHECK_THAT(flagged->flag_evidence(0), Catch::Contains("previous call returned"));

  auto nostart = rig.Evaluate("nostart");
  REQUIRE(nostart.ok());
  CHECK(nostart->verdict() == v1::VERDICT_RUNTIME_ERROR);
  CHECK_THAT(nostart->messages(0), Catch::Contains("candidate: fake: load failed"));
  CHECK(rig.Evaluations("wrong_answer") == 4);
  CHECK(rig.metrics.sandbox_kills.Add({{"reason", "crash"}}).Value() == 2);
  rig.engine->WaitRetired();
  CHECK(rig.format.open_sessions() == 0);
}

TEST_CASE("a broken reference is an infrastructure error, never the candidate's", "[engine]") {
  FakeTaskSpec spec;
  spec.reference = "crash";
  Rig rig(spec);
  auto r = rig.Evaluate("correct");
  REQUIRE(r.ok());
  CHECK(r->verdict() == v1::VERDICT_INFRA_ERROR);
  CHECK_THAT(r->messages(r->messages_size() - 1), Catch::Contains("reference: fake: reference bug"));
}

TEST_CASE("determinism is bitwise or within tolerance, as the task says", "[engine]") {
  Rig bitwise;
  auto r = bitwise.Evaluate("racy");
  REQUIRE(r.ok());
  CHECK(r->verdict() == v1::VERDICT_WRONG_ANSWER);
  CHECK_THAT(r->messages(r->messages_size() - 1), Catch::Contains("non-deterministic"));

  FakeTaskSpec spec;
  spec.bitwise_determinism = false;
  Rig tolerant(spec);
  r = tolerant.Evaluate("racy");
  REQUIRE(r.ok());
  CHECK(r->verdict() == v1::VERDICT_OK);
}

TEST_CASE("global settings and framework-only candidates are flagged, not failed", "[engine]") {
  Rig rig;
  auto flags = rig.Evaluate("flags");
  REQUIRE(flags.ok());
  CHECK(flags->verdict() == v1::VERDICT_OK);
  REQUIRE(flags->flags_size() == 1);
  CHECK(flags->flags(0) == v1::FLAG_GLOBAL_FLAGS);
  CHECK_THAT(flags->flag_evidence(0), Catch::Contains("cudnn.benchmark"));

  auto framework = rig.Evaluate("framework");
  REQUIRE(framework.ok());
  CHECK(framework->verdict() == v1::VERDICT_OK);
  CHECK_FALSE(framework->custom_kernel());
  REQUIRE(framework->flags_size() == 1);
  CHECK(framework->flags(0) == v1::FLAG_NO_CUSTOM_KERNEL);
}

TEST_CASE("a truly constant task flags every pass: no candidate can be told from its trivial solution",
          "[engine]") {
  FakeTaskSpec spec;
  spec.reference = "constant";
  spec.probes = true;
  Rig rig(spec);
  auto first = rig.Evaluate("correct");
  REQUIRE(first.ok());
  CHECK(first->verdict() == v1::VERDICT_OK);
  REQUIRE(first->flags_size() == 1);
  CHECK(first->flags(0) == v1::FLAG_DEGENERATE_TASK);
  // Both "zeros" and "memorised" pass a constant task; both are named.
  CHECK_THAT(first->flag_evidence(0), Catch::Contains("the trivial solutions 'memorised', 'zeros'"));
  CHECK_THAT(first->flag_evidence(0), Catch::Contains("nothing tells a candidate from it"));
  CHECK(rig.format.probe_calls() == 3);

  // Known degenerate: the probes come again (here from the recorded
  // reference answers), to judge this candidate too.
  auto second = rig.Evaluate("fast");
  REQUIRE(second.ok());
  CHECK(second->reference_cached());
  REQUIRE(second->flags_size() == 1);
  CHECK(second->flags(0) == v1::FLAG_DEGENERATE_TASK);
  CHECK_THAT(second->flag_evidence(0), Catch::Contains("nothing tells a candidate from it"));

  auto zeros = rig.Evaluate("zeros");
  REQUIRE(zeros.ok());
  CHECK(zeros->verdict() == v1::VERDICT_OK);  // it is the answer
  REQUIRE(zeros->flags_size() == 1);
  CHECK(zeros->flags(0) == v1::FLAG_DEGENERATE_TASK);

  FakeTaskSpec honest;
  honest.probes = true;
  Rig other(honest);
  auto r = other.Evaluate("correct");
  REQUIRE(r.ok());
  CHECK(r->flags_size() == 0);
}

TEST_CASE("on a task degenerate only at its tolerance, candidates are judged against the trivial solution",
          "[engine]") {
  FakeTaskSpec spec;
  spec.reference = "tiny";  // every output within the tolerance of zero, yet it depends on the inputs
  spec.probes = true;
  Rig rig(spec);
  auto honest = rig.Evaluate("correct");
  REQUIRE(honest.ok());
  CHECK(honest->verdict() == v1::VERDICT_OK);
  CHECK(honest->flags_size() == 0);  // rewarded
  bool said = false;
  for (const auto& m : honest->messages()) {
    said = said || absl::StrContains(m, "verified against the task's own variation");
  }
  CHECK(said);

  // The trivial solution itself passes the tolerance, and fails here.
  auto zeros = rig.Evaluate("zeros");
  REQUIRE(zeros.ok());
  CHECK(zeros->verdict() == v1::VERDICT_WRONG_ANSWER);
  CHECK(zeros->flags_size() == 0);
  CHECK_THAT(zeros->correctness().messages(zeros->correctness().messages_size() - 1),
             Catch::Contains("and the candidate returns it"));

  // Within the tolerance but as far from the reference as the trivial
  // solution is: neither told apart nor caught.
  auto sloppy = rig.Evaluate("sloppy");
  REQUIRE(sloppy.ok());
  CHECK(sloppy->verdict() == v1::VERDICT_OK);
  REQUIRE(sloppy->flags_size() == 1);
  CHECK(sloppy->flags(0) == v1::FLAG_DEGENERATE_TASK);
  CHECK_THAT(sloppy->flag_evidence(0), Catch::Contains("not measurably closer"));
}

TEST_CASE("Measure takes warm-up and timed calls of one side", "[engine]") {
  Rig rig;
  v1::MeasureRequest m;
  m.mutable_task()->set_path("task");
  m.set_iterations(7);
  m.set_warmup(2);
  auto ref = rig.engine->Measure(m, RequestContext::Background());
  REQUIRE(ref.ok());
  CHECK(ref->verdict() == v1::VERDICT_OK);
  CHECK(ref->samples_size() == 7);
  CHECK(ref->samples(0).device_sync_seconds() == 2e-3);
  CHECK(ref->outside_seconds(0) == Approx(2e-3));  // the fake advanced the clock
  CHECK(ref->backend() == v1::BACKEND_HOST);

  m.set_artifact_id(std::string(64, 'f'));
  CHECK(rig.engine->Measure(m, RequestContext::Background()).status().code() ==
        absl::StatusCode::kNotFound);
  auto crash = rig.Evaluate("crash");  // compiles fine: an artifact to measure
  m.set_artifact_id(crash->artifact_id());
  auto measured = rig.engine->Measure(m, RequestContext::Background());
  REQUIRE(measured.ok());
  CHECK(measured->verdict() == v1::VERDICT_RUNTIME_ERROR);
  CHECK_THAT(measured->messages(0), Catch::Contains("call 1: "));
}

TEST_CASE("MeasurePair times both sides until the interval is tight, checking outputs",
          "[engine]") {
  Rig rig;
  auto fast = rig.Evaluate("fast");
  REQUIRE(fast.ok());
  REQUIRE(fast->verdict() == v1::VERDICT_OK);
  v1::MeasurePairRequest m;
  m.mutable_task()->set_path("task");
  m.set_candidate_artifact_id(fast->artifact_id());
  m.set_check_outputs_every(2);
  auto p = rig.engine->MeasurePair(m, RequestContext::Background());
  REQUIRE(p.ok());
  CHECK(p->verdict() == v1::VERDICT_OK);
  CHECK(p->converged());
  CHECK(p->reference_samples_size() == 20);  // min_pairs: constant times converge at once
  CHECK(p->candidate_samples(0).device_sync_seconds() == 1e-3);
  CHECK(p->output_checks() == 10);
  CHECK(p->output_mismatches() == 0);
  // Each timed call ran alone: the other side was stopped meanwhile, and
  // let go again (its own calls and the output checks found it running).
  CHECK(rig.format.most_live_while_timed() == 1);
  CHECK(rig.format.frozen_calls() == 0);
  rig.engine->WaitRetired();
  CHECK(rig.format.open_sessions() == 0);
  CHECK(rig.format.frozen_sessions() == 0);

  auto stale = rig.Evaluate("stale");  // passes verification, replays at timing
  REQUIRE(stale->verdict() == v1::VERDICT_OK);
  m.set_candidate_artifact_id(stale->artifact_id());
  p = rig.engine->MeasurePair(m, RequestContext::Background());
  REQUIRE(p.ok());
  CHECK(p->output_mismatches() > 0);
  CHECK_THAT(p->output_mismatch_detail(), Catch::Contains("output 'y'"));
  CHECK(rig.format.sampled_fetches() == 0);  // 4 elements: under the default, compared whole

  // Outputs larger than checked_elements are compared at sampled positions:
  // agreeing sides still agree, and the replayed ones are still caught.
  m.set_checked_elements(2);
  p = rig.engine->MeasurePair(m, RequestContext::Background());
  REQUIRE(p.ok());
  CHECK(p->output_mismatches() > 0);
  CHECK_THAT(p->output_mismatch_detail(), Catch::Contains("(compared at 2 random positions of float32[4])"));
  CHECK(rig.format.sampled_fetches() > 0);
  m.set_candidate_artifact_id(fast->artifact_id());
  p = rig.engine->MeasurePair(m, RequestContext::Background());
  REQUIRE(p.ok());
  CHECK(p->verdict() == v1::VERDICT_OK);
  CHECK(p->output_checks() == 10);
  CHECK(p->output_mismatches() == 0);
  m.clear_checked_elements();

  auto crash = rig.Evaluate("crash");
  m.set_candidate_artifact_id(crash->artifact_id());
  p = rig.engine->MeasurePair(m, RequestContext::Background());
  REQUIRE(p.ok());
  CHECK(p->verdict() == v1::VERDICT_RUNTIME_ERROR);
  CHECK_THAT(p->messages(0), Catch::Contains("candidate: "));
}

TEST_CASE("MeasurePair's budget is measured on the injected clock", "[engine]") {
  FakeTaskSpec spec;
  spec.reference_seconds = 1.0;  // each pair takes 1.5 fake seconds
  Rig rig(spec);
  auto fast = rig.Evaluate("fast");
  v1::MeasurePairRequest m;
  m.mutable_task()->set_path("task");
  m.set_candidate_artifact_id(fast->artifact_id());
  m.set_warmup(1);
  m.set_min_pairs(100);
  m.set_max_pairs(1000);
  m.set_budget_seconds(10);
  auto p = rig.engine->MeasurePair(m, RequestContext::Background());
  REQUIRE(p.ok());
  CHECK(p->verdict() == v1::VERDICT_OK);
  CHECK_FALSE(p->converged());
  CHECK(p->reference_samples_size() == 10);  // two blocks of 5: 15 s > the 10 s budget
}

TEST_CASE("a task that is its own reference takes no reference artifact", "[engine]") {
  FakeTaskSpec spec;
  spec.compiled_reference = false;
  Rig rig(spec);
  auto r = rig.Evaluate("correct");
  REQUIRE(r.ok());
  CHECK(r->verdict() == v1::VERDICT_OK);
  v1::MeasurePairRequest m;
  m.mutable_task()->set_path("task");
  m.set_candidate_artifact_id(r->artifact_id());
  m.set_reference_artifact_id(r->artifact_id());
  CHECK(rig.engine->MeasurePair(m, RequestContext::Background()).status().code() ==
        absl::StatusCode::kInvalidArgument);
  v1::CompileRequest c;
  c.mutable_task()->set_path("task");
  auto compiled = rig.engine->Compile(c, RequestContext::Background());
  CHECK(compiled.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(compiled.status().message()), Catch::Contains("needs no compile step"));
}

TEST_CASE("a failure that sharing the GPU could cause is re-verified alone on the lane", "[engine]") {
  CudaRig rig;
  auto request = [](const std::string& behaviour) { return CudaRig::Request(behaviour); };
  // Alone on the lane, but its two sides ran at once: a timeout is confirmed
  // with the sides apart.
  auto alone = rig.engine->Evaluate(request("timeout"), RequestContext::Background());
  REQUIRE(alone.ok());
  CHECK(alone->verdict() == v1::VERDICT_TIMEOUT);
  CHECK_THAT(alone->messages(0),
             Catch::Contains("re-verified alone on the lane: the first run (TIMEOUT) ran its two sides on the GPU at once"));

  // Another verification holds the lane: the same failure is run again alone
  // (the retry waits for the other lease to end).
  auto other = rig.lanes.Acquire(BackendKind::kCuda, RequestContext::Background(), absl::Seconds(1), LaneUse::kShared);
  REQUIRE(other.ok());
  std::optional<LaneLease> held(std::move(*other));
  std::thread release([&] {
    Eventually([&] { return rig.lanes.Waiting() == 1; });
    held.reset();
  });
  auto shared_run = rig.engine->Evaluate(request("timeout"), RequestContext::Background());
  release.join();
  REQUIRE(shared_run.ok());
  CHECK(shared_run->verdict() == v1::VERDICT_TIMEOUT);
  CHECK_THAT(shared_run->messages(0), Catch::Contains("re-verified alone on the lane: the first run (TIMEOUT) shared it"));
  // The last message is still the reason of the verdict.
  CHECK_THAT(shared_run->messages(shared_run->messages_size() - 1), Catch::Contains("exceeded its limit"));
  CHECK(rig.Evaluations("timeout") == 2);  // one verdict per evaluation, however many runs

  // A verdict sharing cannot cause is kept from the shared run.
  auto again = rig.lanes.Acquire(BackendKind::kCuda, RequestContext::Background(), absl::Seconds(1), LaneUse::kShared);
  REQUIRE(again.ok());
  auto wrong = rig.engine->Evaluate(request("wrong"), RequestContext::Background());
  REQUIRE(wrong.ok());
  CHECK(wrong->verdict() == v1::VERDICT_WRONG_ANSWER);
  for (const auto& m : wrong->messages()) CHECK_THAT(m, !Catch::Contains("re-verified"));
}

TEST_CASE("a GPU verification readies its sides' processes before it waits for the lane, and starts on them "
          "once it holds it", "[engine]") {
  CudaRig rig;
  rig.format.set_readies(true);
  auto request = [](const std::string& behaviour) { return CudaRig::Request(behaviour); };
  // Timing holds the lane: the verification readies both sides, then waits.
  auto timing = rig.lanes.Acquire(BackendKind::kCuda, RequestContext::Background(), absl::Seconds(1),
                                  LaneUse::kExclusive);
  REQUIRE(timing.ok());
  std::optional<LaneLease> held(std::move(*timing));
  absl::StatusOr<v1::EvaluateResponse> first;
  std::thread run([&] { first = rig.engine->Evaluate(request("correct"), RequestContext::Background()); });
  CHECK(Eventually([&] { return rig.lanes.Waiting() == 1; }));
  CHECK(rig.format.readied() == 2);
  CHECK(rig.format.starts() == 0);
  held.reset();
  run.join();
  REQUIRE(first.ok());
  CHECK(first->verdict() == v1::VERDICT_OK);
  CHECK(rig.format.started_readied() == 2);
  CHECK(rig.format.starts() == 2);
  // Readying (a second of the fake clock per side) is its own account, not
  // lane waiting or starting.
  CHECK(first->prepare_seconds() == Approx(2.0));
  CHECK(first->lane_wait_seconds() == Approx(0.0));
  CHECK(first->start_seconds() == Approx(0.0));

  // The reference's answers are recorded now: only the candidate is readied.
  auto second = rig.engine->Evaluate(request("correct"), RequestContext::Background());
  REQUIRE(second.ok());
  CHECK(second->reference_cached());
  CHECK(rig.format.readied() == 3);
  CHECK(rig.format.started_readied() == 3);
  CHECK(rig.format.reference_starts() == 1);
  CHECK(second->prepare_seconds() == Approx(1.0));

  // A format that readies nothing starts its sides under the lease, as before.
  rig.format.set_readies(false);
  auto third = rig.engine->Evaluate(request("wrong"), RequestContext::Background());
  REQUIRE(third.ok());
  CHECK(third->verdict() == v1::VERDICT_WRONG_ANSWER);
  CHECK(rig.format.readied() == 3);
  CHECK(third->prepare_seconds() == Approx(0.0));
  rig.engine->WaitRetired();
  CHECK(rig.format.open_sessions() == 0);
}

TEST_CASE("verifications beyond ready_ahead_per_lane wait for the lane holding nothing, and start their sides "
          "under the lease", "[engine]") {
  EngineOptions options;
  options.ready_ahead_per_lane = 1;
  CudaRig rig(options);
  rig.format.set_readies(true);
  auto timing = rig.lanes.Acquire(BackendKind::kCuda, RequestContext::Background(), absl::Seconds(1),
                                  LaneUse::kExclusive);
  REQUIRE(timing.ok());
  std::optional<LaneLease> held(std::move(*timing));
  std::vector<absl::StatusOr<v1::EvaluateResponse>> done(2);
  std::vector<std::thread> runs;
  for (size_t i = 0; i < done.size(); ++i) {
    runs.emplace_back([&, i] {
      done[i] = rig.engine->Evaluate(CudaRig::Request(i == 0 ? "correct" : "fast"), RequestContext::Background());
    });
  }
  CHECK(Eventually([&] { return rig.lanes.Waiting() == 2; }));
  CHECK(rig.format.readied() == 2);  // one verification's two sides, not four
  held.reset();
  for (auto& t : runs) t.join();
  int readied_runs = 0;
  for (const auto& d : done) {
    REQUIRE(d.ok());
    CHECK(d->verdict() == v1::VERDICT_OK);
    readied_runs += d->prepare_seconds() > 0;
  }
  CHECK(readied_runs == 1);
  CHECK(rig.format.started_readied() == 2);

  // The count is given back: the next verification readies again.
  auto next = rig.engine->Evaluate(CudaRig::Request("correct"), RequestContext::Background());
  REQUIRE(next.ok());
  CHECK(next->prepare_seconds() > 0);
  rig.engine->WaitRetired();
  CHECK(rig.format.open_sessions() == 0);
}

TEST_CASE("a GPU measurement replays graphs, starts over as launched when a side cannot be captured, "
          "and starts its sides only once it holds the lane alone", "[engine]") {
  CudaRig rig;
  auto measure = [&](const std::string& behaviour) -> absl::StatusOr<v1::MeasurePairResponse> {
    auto r = rig.engine->Evaluate(CudaRig::Request(behaviour), RequestContext::Background());
    REQUIRE(r.ok());
    REQUIRE(r->verdict() == v1::VERDICT_OK);
    return rig.engine->MeasurePair(FivePairs(r->artifact_id()), RequestContext::Background());
  };

  int starts = rig.format.starts();
  auto p = measure("correct");
  REQUIRE(p.ok());
  CHECK(p->verdict() == v1::VERDICT_OK);
  CHECK(p->timing_mode() == "graph");
  CHECK(p->graph_fallback().empty());
  CHECK(p->reference_samples_size() == 5);
  CHECK(rig.format.starts() - starts == 2 + 2);  // verification's pair, then the measurement's

  starts = rig.format.starts();
  p = measure("nograph");
  REQUIRE(p.ok());
  CHECK(p->verdict() == v1::VERDICT_OK);
  CHECK(p->timing_mode() == "eager");
  CHECK(p->graph_fallback() == "candidate: capture failed: fake");
  CHECK(p->reference_samples_size() == 5);
  // The candidate alone for verification (the reference's answers were
  // recorded by the first), a pair to measure, a fresh pair as launched.
  CHECK(rig.format.starts() - starts == 1 + 2 + 2);
  rig.engine->WaitRetired();
  CHECK(rig.format.open_sessions() == 0);

  // A verification holds the lane: the measurement's sides (whose load runs
  // candidate code) start only once it has the lane alone.
  auto other = rig.lanes.Acquire(BackendKind::kCuda, RequestContext::Background(), absl::Seconds(1), LaneUse::kShared);
  REQUIRE(other.ok());
  std::optional<LaneLease> held(std::move(*other));
  v1::EvaluateRequest request = Rig::Request("correct");
  request.mutable_candidate()->set_backend(v1::BACKEND_CUDA);
  // Verified before the lane is taken.
  auto verified = rig.engine->Evaluate(request, RequestContext::Background());
  REQUIRE(verified.ok());
  const v1::MeasurePairRequest m = FivePairs(verified->artifact_id());
  std::atomic<bool> done{false};
  absl::StatusOr<v1::MeasurePairResponse> waited;
  std::thread call([&] {
    waited = rig.engine->MeasurePair(m, RequestContext::Background());
    done = true;
  });
  CHECK(Eventually([&] { return rig.lanes.Waiting() == 1; }));
  rig.engine->WaitRetired();
  CHECK(rig.format.open_sessions() == 0);
  CHECK_FALSE(done.load());
  held.reset();
  call.join();
  REQUIRE(waited.ok());
  CHECK(waited->verdict() == v1::VERDICT_OK);
  CHECK(waited->reference_samples_size() == 5);
}

// A CUDA rig of one GPU lane with two verification slots, and the calls of
// a verification that keeps its sides and of the measurement naming them.
struct KeptCalls {
  explicit KeptCalls(EngineOptions options = {}) : rig(options) {}
  v1::EvaluateResponse Verify(const std::string& behaviour, double keep) {
    auto r = rig.engine->Evaluate(CudaRig::Request(behaviour, keep), RequestContext::Background());
    REQUIRE(r.ok());
    return *r;
  }
  absl::StatusOr<v1::MeasurePairResponse> Measure(const v1::EvaluateResponse& verified,
                                                  const std::string& kept_pair) {
    v1::MeasurePairRequest m = FivePairs(verified.artifact_id());
    m.set_kept_pair(kept_pair);
    return rig.engine->MeasurePair(m, RequestContext::Background());
  }
  // Two candidates verified and kept on the one lane, then both measured at
  // once by their tokens: both answers, OK.
  std::pair<v1::MeasurePairResponse, v1::MeasurePairResponse> TwoKeptMeasuredAtOnce() {
    v1::EvaluateResponse a = Verify("correct", 10), b = Verify("fast", 10);
    REQUIRE_FALSE(a.kept_pair().empty());
    REQUIRE_FALSE(b.kept_pair().empty());
    CHECK(rig.engine->KeptPairs() == 2);
    absl::StatusOr<v1::MeasurePairResponse> pa, pb;
    std::thread ta([&] { pa = Measure(a, a.kept_pair()); });
    std::thread tb([&] { pb = Measure(b, b.kept_pair()); });
    ta.join();
    tb.join();
    REQUIRE(pa.ok());
    REQUIRE(pb.ok());
    CHECK(pa->verdict() == v1::VERDICT_OK);
    CHECK(pb->verdict() == v1::VERDICT_OK);
    return {*pa, *pb};
  }
  CudaRig rig;
};

TEST_CASE("a GPU measurement starting over as launched waits until the worker's other GPUs stop verifying",
          "[engine]") {
  Rig rig(CudaRig::CudaSpec(), {{BackendKind::kCuda, 0, "cuda:0"}, {BackendKind::kCuda, 1, "cuda:1"}},
          CudaRig::TwoSlots());
  auto verified = rig.engine->Evaluate(CudaRig::Request("nograph"), RequestContext::Background());
  REQUIRE(verified.ok());
  REQUIRE(verified->verdict() == v1::VERDICT_OK);
  auto other = rig.lanes.AcquireOn(1, RequestContext::Background(), absl::Seconds(1), LaneUse::kShared);
  REQUIRE(other.ok());
  std::optional<LaneLease> held(std::move(*other));  // a verification on the other GPU
  absl::StatusOr<v1::MeasurePairResponse> measured;
  std::atomic<bool> done{false};
  std::thread measure([&] {
    measured = rig.engine->MeasurePair(FivePairs(verified->artifact_id()), RequestContext::Background());
    done = true;
  });
  // The attempt replaying graphs takes GPU 0 beside the verification; the
  // start over as launched asks GPU 1 to step aside, and waits for it.
  REQUIRE(Eventually([&] { return held->TimingWaiting(); }));
  CHECK_FALSE(done.load());
  held.reset();
  measure.join();
  REQUIRE(measured.ok());
  CHECK(measured->verdict() == v1::VERDICT_OK);
  CHECK(measured->timing_mode() == "eager");
  CHECK(measured->graph_fallback() == "candidate: capture failed: fake");
  rig.engine->WaitRetired();
  CHECK(rig.format.open_sessions() == 0);
}

TEST_CASE("verified sides kept for their measurement are timed without starting again; expired, foreign "
          "and contended ones end and fresh sides start", "[engine]") {
  KeptCalls calls;
  Rig& rig = calls.rig;
  auto verify = [&](const std::string& behaviour, double keep) { return calls.Verify(behaviour, keep); };
  auto measure = [&](const v1::EvaluateResponse& v, const std::string& kept) { return calls.Measure(v, kept); };

  SECTION("kept, then timed on the same two sides") {
    int starts = rig.format.starts();
    v1::EvaluateResponse v = verify("correct", 10);
    REQUIRE(v.verdict() == v1::VERDICT_OK);
    REQUIRE_FALSE(v.kept_pair().empty());
    CHECK(rig.engine->KeptPairs() == 1);
    CHECK(rig.format.open_sessions() == 2);
    CHECK(rig.format.frozen_sessions() == 2);  // frozen, and off the lane until measured
    CHECK(rig.lanes.Busy() == 0);
    auto p = measure(v, v.kept_pair());
    REQUIRE(p.ok());
    CHECK(p->verdict() == v1::VERDICT_OK);
    CHECK(p->kept_pair_used());
    CHECK(p->timing_mode() == "graph");
    CHECK(p->reference_samples_size() == 5);
    CHECK(rig.format.starts() - starts == 2);  // verification's pair only
    CHECK(rig.format.frozen_sessions() == 0);
    CHECK(rig.format.frozen_calls() == 0);
    CHECK(rig.engine->KeptPairs() == 0);
    rig.engine->WaitRetired();
    CHECK(rig.format.open_sessions() == 0);
    CHECK(rig.lanes.Busy() == 0);

    // Taken once: the token means nothing afterwards.
    starts = rig.format.starts();
    p = measure(v, v.kept_pair());
    REQUIRE(p.ok());
    CHECK_FALSE(p->kept_pair_used());
    CHECK_THAT(p->messages(0), Catch::Contains("is not kept here") && Catch::Contains("started afresh"));
    CHECK(rig.format.starts() - starts == 2);
  }

  SECTION("only verified candidates are kept, for at most max_keep_seconds") {
    v1::EvaluateResponse wrong = verify("wrong", 10);
    CHECK(wrong.verdict() == v1::VERDICT_WRONG_ANSWER);
    CHECK(wrong.kept_pair().empty());
    CHECK(verify("correct", 0).kept_pair().empty());
    CHECK(rig.engine->KeptPairs() == 0);
    rig.engine->WaitRetired();
    CHECK(rig.format.open_sessions() == 0);
    for (double bad : {-1.0, 61.0}) {
      v1::EvaluateRequest request = Rig::Request("correct");
      request.set_keep_for_timing_seconds(bad);
      auto r = rig.engine->Evaluate(request, RequestContext::Background());
      REQUIRE_FALSE(r.ok());
      CHECK(r.status().code() == absl::StatusCode::kInvalidArgument);
      CHECK_THAT(std::string(r.status().message()), Catch::Contains("keep_for_timing_seconds"));
    }
  }

  SECTION("a kept pair waits off the lane: other timing goes first, alone, and the pair is still timed as kept") {
    v1::EvaluateResponse kept = verify("correct", 10);
    REQUIRE_FALSE(kept.kept_pair().empty());
    v1::EvaluateResponse other = verify("fast", 0);
    auto first = measure(other, "");
    REQUIRE(first.ok());
    CHECK(first->verdict() == v1::VERDICT_OK);
    CHECK(rig.format.most_live_while_timed() == 1);  // the kept pair was frozen, and the idle side
    CHECK(rig.engine->KeptPairs() == 1);
    auto p = measure(kept, kept.kept_pair());
    REQUIRE(p.ok());
    CHECK(p->verdict() == v1::VERDICT_OK);
    CHECK(p->kept_pair_used());
    // One that expires is killed frozen, without a call.
    REQUIRE_FALSE(verify("correct", 10).kept_pair().empty());
    rig.clock.Advance(absl::Seconds(11));
    rig.engine->DropExpiredKept();
    CHECK(rig.engine->KeptPairs() == 0);
    rig.engine->WaitRetired();
    CHECK(rig.format.open_sessions() == 0);
    CHECK(rig.format.frozen_sessions() == 0);
    CHECK(rig.format.frozen_calls() == 0);
    CHECK(rig.lanes.Busy() == 0);
  }

  SECTION("a token kept for another candidate ends that pair") {
    v1::EvaluateResponse kept = verify("correct", 10);
    v1::EvaluateResponse fast = verify("fast", 0);
    const int starts = rig.format.starts();
    auto p = measure(fast, kept.kept_pair());
    REQUIRE(p.ok());
    CHECK(p->verdict() == v1::VERDICT_OK);
    CHECK_FALSE(p->kept_pair_used());
    CHECK_THAT(p->messages(0), Catch::Contains("another candidate"));
    CHECK(rig.format.starts() - starts == 2);
    CHECK(rig.engine->KeptPairs() == 0);
    rig.engine->WaitRetired();
    CHECK(rig.format.open_sessions() == 0);
  }

  SECTION("two kept pairs on one lane are both timed as kept, one after the other") {
    auto [pa, pb] = calls.TwoKeptMeasuredAtOnce();
    CHECK(pa.kept_pair_used());
    CHECK(pb.kept_pair_used());
    CHECK(rig.format.most_live_while_timed() == 1);  // only the side being timed runs
    rig.engine->WaitRetired();
    CHECK(rig.format.open_sessions() == 0);
    CHECK(rig.lanes.Busy() == 0);
  }

  SECTION("a kept candidate that cannot be captured is measured again on fresh sides") {
    const int starts = rig.format.starts();
    v1::EvaluateResponse v = verify("nograph", 10);
    auto p = measure(v, v.kept_pair());
    REQUIRE(p.ok());
    CHECK(p->verdict() == v1::VERDICT_OK);
    CHECK(p->timing_mode() == "eager");
    CHECK(p->graph_fallback() == "candidate: capture failed: fake");
    CHECK(rig.format.starts() - starts == 2 + 2);  // verification's (also the first measurement's), then fresh
  }

  SECTION("an engine that ends ends its kept pairs") {
    REQUIRE_FALSE(verify("correct", 10).kept_pair().empty());
    rig.engine.reset();
    CHECK(rig.format.open_sessions() == 0);
    CHECK(rig.lanes.Busy() == 0);
  }
}

TEST_CASE("with step_aside_for_timing off, a kept pair holds its place on the lane", "[engine]") {
  EngineOptions options;
  options.step_aside_for_timing = false;
  KeptCalls calls(options);
  Rig& rig = calls.rig;
  auto verify = [&](const std::string& behaviour, double keep) { return calls.Verify(behaviour, keep); };
  auto measure = [&](const v1::EvaluateResponse& v, const std::string& kept) { return calls.Measure(v, kept); };

  SECTION("it holds back other timing on its lane until it expires") {
    v1::EvaluateResponse kept = verify("correct", 10);
    REQUIRE_FALSE(kept.kept_pair().empty());
    CHECK(rig.format.frozen_sessions() == 0);
    CHECK(rig.lanes.Busy() == 1);  // the pair keeps its place on the lane
    v1::EvaluateResponse other = verify("fast", 0);
    std::atomic<bool> done{false};
    absl::StatusOr<v1::MeasurePairResponse> waited;
    std::thread call([&] {
      waited = measure(other, "");
      done = true;
    });
    CHECK(Eventually([&] { return rig.lanes.Waiting() == 1; }));
    CHECK_FALSE(done.load());
    rig.clock.Advance(absl::Seconds(9));
    rig.engine->DropExpiredKept();
    CHECK(rig.engine->KeptPairs() == 1);
    rig.clock.Advance(absl::Seconds(2));
    rig.engine->DropExpiredKept();
    call.join();
    CHECK(rig.engine->KeptPairs() == 0);
    REQUIRE(waited.ok());
    CHECK(waited->verdict() == v1::VERDICT_OK);
    CHECK_FALSE(waited->kept_pair_used());
    // The expired pair's token starts afresh, and says why.
    auto late = measure(kept, kept.kept_pair());
    REQUIRE(late.ok());
    CHECK(late->verdict() == v1::VERDICT_OK);
    CHECK_FALSE(late->kept_pair_used());
    rig.engine->WaitRetired();
    CHECK(rig.format.open_sessions() == 0);
  }

  SECTION("two kept pairs on one lane: one is timed as kept, the other ends and starts afresh") {
    auto [pa, pb] = calls.TwoKeptMeasuredAtOnce();
    CHECK(pa.kept_pair_used() + pb.kept_pair_used() == 1);
    const auto& lost = pa.kept_pair_used() ? pb : pa;
    CHECK_THAT(lost.messages(0), Catch::Contains("could not be timed") &&
                                     Catch::Contains("already waiting to hold lane cuda:0 alone"));
    rig.engine->WaitRetired();
    CHECK(rig.format.open_sessions() == 0);
    CHECK(rig.lanes.Busy() == 0);
  }

}

v1::EvaluateRequest CudaRequest(const std::string& behaviour) {
  v1::EvaluateRequest r = Rig::Request(behaviour);
  r.mutable_candidate()->set_backend(v1::BACKEND_CUDA);
  return r;
}

// On one GPU lane with two verification slots: a candidate verified first
// (the task's reference answers recorded), then a "gated" verification held
// in its first call while the first candidate's measurement waits for the
// lane; the call is then let through. Both answers, once both have ended.
struct BesideTiming {
  absl::StatusOr<v1::EvaluateResponse> verification;
  absl::StatusOr<v1::MeasurePairResponse> measurement;
};
BesideTiming VerifyBesideTiming(Rig& rig) {
  BesideTiming out;
  auto fast = rig.engine->Evaluate(CudaRequest("fast"), RequestContext::Background());
  REQUIRE(fast.ok());
  REQUIRE(fast->verdict() == v1::VERDICT_OK);
  CHECK(fast->steps_aside() == 0);  // no timing waited
  rig.engine->WaitRetired();

  rig.format.trial_gate().Hold();
  std::thread verifying(
      [&] { out.verification = rig.engine->Evaluate(CudaRequest("gated"), RequestContext::Background()); });
  // (Only the candidate's side starts: the reference's answers are recorded.)
  CHECK(Eventually([&] { return rig.lanes.Busy() == 1 && rig.format.open_sessions() == 1; }));
  std::thread measuring([&] {
    out.measurement = rig.engine->MeasurePair(FivePairs(fast->artifact_id()), RequestContext::Background());
  });
  CHECK(Eventually([&] { return rig.lanes.Waiting() == 1; }));
  rig.format.trial_gate().Open();
  verifying.join();
  measuring.join();
  REQUIRE(out.verification.ok());
  REQUIRE(out.measurement.ok());
  CHECK(out.verification->verdict() == v1::VERDICT_OK);
  CHECK(out.measurement->verdict() == v1::VERDICT_OK);
  // Timing never ran beside a live verification; no frozen side was called.
  CHECK(rig.format.most_live_while_timed() == 1);  // only the side being timed runs
  CHECK(rig.format.frozen_calls() == 0);
  rig.engine->WaitRetired();
  CHECK(rig.format.open_sessions() == 0);
  CHECK(rig.format.frozen_sessions() == 0);
  CHECK(rig.lanes.Busy() == 0);
  return out;
}

TEST_CASE("a GPU verification steps aside between two calls while timing waits, its sides frozen", "[engine]") {
  EngineOptions options;
  options.step_aside_for_timing = GENERATE(true, false);
  CudaRig rig(options);
  const BesideTiming run = VerifyBesideTiming(rig);
  const auto& v = run.verification;
  CHECK(v->correctness().trials_passed() == v->correctness().trials());
  // Stepping aside: timed after the first trial, the verification's sides
  // frozen. Without: timed once the verification had ended.
  CHECK(v->steps_aside() == (options.step_aside_for_timing ? 1 : 0));
}

TEST_CASE("a GPU verification steps aside as soon as its last call has answered: its comparisons never hold timing "
          "back",
          "[engine]") {
  EngineOptions options;
  options.verify.trials = 1;  // one call: nothing of the protocol comes after it
  options.verify.determinism_reruns = 0;
  CudaRig rig(options);
  // Its one call answered while timing waited: it let go of the lane there,
  // its sides frozen, and compared the answers off the lane.
  CHECK(VerifyBesideTiming(rig).verification->steps_aside() == 1);
}

TEST_CASE("bad requests are statuses that name the field", "[engine]") {
  Rig rig;
  v1::EvaluateRequest r = Rig::Request("");
  CHECK(rig.engine->Evaluate(r, RequestContext::Background()).status().message() ==
        "candidate.source: empty");
  r = Rig::Request("correct");
  r.mutable_candidate()->set_backend(v1::BACKEND_CUDA);
  auto cuda = rig.engine->Evaluate(r, RequestContext::Background());
  CHECK(cuda.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(cuda.status().message()), Catch::Contains("no cuda reference"));
  r.mutable_candidate()->set_backend(static_cast<v1::Backend>(42));
  CHECK(rig.engine->Evaluate(r, RequestContext::Background()).status().message() ==
        "backend: unknown value");
  r = Rig::Request("correct");
  r.mutable_task()->set_format(static_cast<v1::TaskFormat>(9));
  CHECK(rig.engine->Evaluate(r, RequestContext::Background()).status().message() ==
        "task.format: unknown value");
}

TEST_CASE("a cancelled request stops at once and frees its lane", "[engine]") {
  Rig rig;
  RequestContext context(&rig.clock, absl::InfiniteFuture());
  absl::StatusOr<v1::EvaluateResponse> result;
  std::thread call([&] { result = rig.Evaluate("hang", context); });
  // Both sides started, the candidate's first call hanging. (The check was
  // for one open side, which only held for a moment while the reference was
  // still starting beside the candidate: under load it was missed.)
  CHECK(Eventually([&] { return rig.lanes.Busy() == 1 && rig.format.open_sessions() == 2; }));
  context.Cancel();
  call.join();
  CHECK(result.status().code() == absl::StatusCode::kCancelled);  // a status, not a verdict
  CHECK(rig.lanes.Busy() == 0);
  rig.engine->WaitRetired();
  CHECK(rig.format.open_sessions() == 0);
  CHECK(rig.Evaluations("infra_error") == 0);
}

TEST_CASE("a lane wait ends with the request's deadline", "[engine]") {
  Rig rig;
  auto held = rig.lanes.Acquire(BackendKind::kHost, RequestContext::Background(), absl::Seconds(1));
  REQUIRE(held.ok());
  RequestContext context(&rig.clock, rig.clock.Now() + absl::Seconds(30));
  absl::StatusOr<v1::EvaluateResponse> result;
  std::thread call([&] { result = rig.Evaluate("correct", context); });
  REQUIRE(Eventually([&] { return rig.lanes.Waiting() == 1; }));
  rig.clock.Advance(absl::Seconds(31));
  call.join();
  CHECK(result.status().code() == absl::StatusCode::kDeadlineExceeded);
  CHECK(rig.lanes.Waiting() == 0);
}

TEST_CASE("JudgeDegenerate: separated from every trivial solution, at one, or neither", "[verifier]") {
  ProbeStanding close;  // 1e-3 of the trivial solution's distance: rewarded
  close.trials = close.passed = 3;
  close.worst_ratio = 1e-3;
  ProbeStanding far = close;  // half of it: cannot be told
  far.separated = false;
  far.worst_ratio = 0.5;
  ProbeStanding at = far;  // the trivial solution itself on one trial
  at.matched = 1;
  const double margin = 0.1;
  CHECK(JudgeDegenerate("t", {}, {}, margin).kind == DegenerateJudgement::kRewarded);
  CHECK(JudgeDegenerate("t", {"zeros"}, {{"zeros", close}}, margin).kind == DegenerateJudgement::kRewarded);
  // Every one must be separated.
  auto j = JudgeDegenerate("t", {"memorised", "zeros"}, {{"memorised", far}, {"zeros", close}}, margin);
  CHECK(j.kind == DegenerateJudgement::kFlagged);
  CHECK_THAT(j.message, Catch::Contains("not measurably closer to the reference (distance 0.5"));
  j = JudgeDegenerate("t", {"memorised", "zeros"}, {{"memorised", at}, {"zeros", close}}, margin);
  CHECK(j.kind == DegenerateJudgement::kTrivial);
  CHECK_THAT(j.message, Catch::Contains("'memorised' solution, and the candidate returns it"));
  // A degenerate name this candidate was not probed for is never rewarded.
  j = JudgeDegenerate("t", {"zeros"}, {}, margin);
  CHECK(j.kind == DegenerateJudgement::kFlagged);
  CHECK_THAT(j.message, Catch::Contains("could not be measured"));
  // The nearly-memorised wording.
  j = JudgeDegenerate("t", {"memorised within 10x the tolerance"}, {{"memorised within 10x the tolerance", far}},
                      margin);
  CHECK_THAT(j.message, Catch::Contains("nearly independent of its inputs"));
}

}  // namespace
}  // namespace crl
