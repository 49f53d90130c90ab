// Copies of one program in a group are evaluated and timed once
// (services/orchestrator/program_share.h): the share on its own, then a
// run's round over the orchestrator's fakes.
#include <catch2/catch.hpp>

#include <prometheus/registry.h>

#include <atomic>
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <thread>

#include "absl/strings/match.h"

#include "services/orchestrator/orchestrator_metrics.h"
#include "services/orchestrator/program_share.h"
#include "services/orchestrator/run_executor.h"
#include "tests/support/orchestrator_rig.h"

namespace crl::orchestrator {
namespace {

v1::Candidate Program(const std::string& source, const std::string& filename = "candidate.cc") {
  v1::Candidate c;
  c.set_source(source);
  c.set_filename(filename);
  c.set_backend(v1::BACKEND_HOST);
  return c;
}

v1::Variant ScoredAs(const std::string& key, v1::Verdict verdict, double speedup) {
  v1::Variant v;
  v.set_key(key);
  v.set_scored(true);
  v.set_verdict(verdict);
  v.set_speedup(speedup);
  v.set_speedup_ci_low(speedup * 0.9);
  v.set_speedup_ci_high(speedup * 1.1);
  v.add_flags(v1::FLAG_NOISY);
  v.add_flag_evidence("spread 12%");
  v.set_log("evaluated on w1: VERDICT_OK\n");
  return v;
}

TEST_CASE("program share: a program's key is its task and candidate, byte for byte", "[orchestrator]") {
  const std::string a = ProgramShare::KeyOf("t", Program("int f();"));
  CHECK(a == ProgramShare::KeyOf("t", Program("int f();")));
  CHECK(a != ProgramShare::KeyOf("t", Program("int f(); ")));
  CHECK(a != ProgramShare::KeyOf("t", Program("int f();", "other.cc")));
  v1::Candidate cuda = Program("int f();");
  cuda.set_backend(v1::BACKEND_CUDA);
  CHECK(a != ProgramShare::KeyOf("t", cuda));
  CHECK(a != ProgramShare::KeyOf("u", Program("int f();")));
  // No field can run into the next.
  CHECK(ProgramShare::KeyOf("t", Program("b", "a")) != ProgramShare::KeyOf("t", Program("", "ab")));
  CHECK(ProgramShare::KeyOf("t1", Program("b", "a")) != ProgramShare::KeyOf("t", Program("b", "1a")));
}

TEST_CASE("program share: the first copy leads, the others wait for its scoring", "[orchestrator]") {
  ProgramShare share;
  const std::string key = ProgramShare::KeyOf("t", Program("x"));
  auto first = share.Join(key, RequestContext::Background());
  REQUIRE(first.ok());
  REQUIRE_FALSE(first->earlier);
  REQUIRE(first->lead.held());

  // Another program is not held up by it.
  auto other = share.Join(ProgramShare::KeyOf("t", Program("y")), RequestContext::Background());
  REQUIRE(other.ok());
  CHECK(other->lead.held());

  std::atomic<bool> joined{false};
  std::optional<v1::Variant> seen;
  std::thread second([&] {
    auto j = share.Join(key, RequestContext::Background());
    REQUIRE(j.ok());
    CHECK_FALSE(j->lead.held());
    seen = j->earlier;
    joined = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  CHECK_FALSE(joined.load());  // still waiting: the lead has not published
  first->lead.Publish(ScoredAs("rl/r0/t/0", v1::VERDICT_OK, 2.5));
  second.join();
  REQUIRE(seen);
  CHECK(seen->speedup() == 2.5);
  CHECK(share.shared() == 1);

  // Later copies take it at once.
  auto third = share.Join(key, RequestContext::Background());
  REQUIRE(third.ok());
  REQUIRE(third->earlier);
  CHECK(share.shared() == 2);

  v1::Variant copy;
  copy.set_key("rl/r0/t/5");
  copy.set_analysis("its own words");
  TakeScoring(*third->earlier, &copy);
  CHECK(copy.verdict() == v1::VERDICT_OK);
  CHECK(copy.speedup() == 2.5);
  CHECK(copy.speedup_ci_low() == Approx(2.25));
  CHECK(copy.speedup_ci_high() == Approx(2.75));
  REQUIRE(copy.flags_size() == 1);
  CHECK(copy.flags(0) == v1::FLAG_NOISY);
  REQUIRE(copy.flag_evidence_size() == 1);
  CHECK(copy.analysis() == "its own words");
  CHECK(copy.key() == "rl/r0/t/5");
  CHECK_THAT(copy.log(), Catch::StartsWith("the same program as rl/r0/t/0") &&
                             Catch::Contains("evaluated on w1: VERDICT_OK"));
}

TEST_CASE("program share: an outcome without a verdict is not shared; the next copy leads", "[orchestrator]") {
  ProgramShare share;
  const std::string key = ProgramShare::KeyOf("t", Program("x"));
  {
    auto first = share.Join(key, RequestContext::Background());
    REQUIRE(first.ok());
    REQUIRE(first->lead.held());
    v1::Variant infra;
    infra.set_scored(true);
    infra.set_infra_failure(true);
    first->lead.Publish(infra);
  }
  auto second = share.Join(key, RequestContext::Background());
  REQUIRE(second.ok());
  CHECK_FALSE(second->earlier);
  REQUIRE(second->lead.held());
  {
    ProgramShare::Lead dropped = std::move(second->lead);  // an error path: never published
  }
  auto third = share.Join(key, RequestContext::Background());
  REQUIRE(third.ok());
  CHECK_FALSE(third->earlier);
  CHECK(third->lead.held());
  CHECK(share.shared() == 0);
}

TEST_CASE("program share: a copy waiting when its context ends gets an error", "[orchestrator]") {
  ProgramShare share;
  const std::string key = ProgramShare::KeyOf("t", Program("x"));
  auto first = share.Join(key, RequestContext::Background());
  REQUIRE(first.ok());
  RequestContext ctx;
  std::thread cancel([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ctx.Cancel();
  });
  auto waiting = share.Join(key, ctx);
  cancel.join();
  CHECK_FALSE(waiting.ok());
}

TEST_CASE("a round scores each program of a group once; copies take its verdict, timing and reward",
          "[orchestrator]") {
  Rig rig;
  // Six completions of one task: three copies of "fast", two of "slow" and
  // one "other" that fails verification.
  for (const char* code : {"fast", "slow", "fast", "other", "fast", "slow"}) rig.prompt.Push(Parsed(code));
  // Evaluations in order of the distinct programs: fast, slow, other.
  rig.w1.Push(Verdict(v1::VERDICT_OK));
  rig.w1.Push(Verdict(v1::VERDICT_OK));
  rig.w1.Push(Verdict(v1::VERDICT_WRONG_ANSWER));
  rig.timing.Push(Timed(3.0));
  rig.timing.Push(Timed(0.5));
  prometheus::Registry registry;
  OrchestratorMetrics metrics(&registry);
  Services services = rig.services();
  services.metrics = &metrics;
  ExecutorOptions eo;
  eo.parallel_candidates = 1;  // the scripted fakes answer in order
  RunExecutor ex(services, rig.store.get(), &rig.clock, eo, nullptr);
  std::atomic<bool> stopping{false};
  auto end = ex.Execute(rig.NewRun(Spec("contrastive-rl", 1, 6)), RequestContext::Background(), stopping);
  REQUIRE(end.ok());
  CHECK(end->state() == v1::RUN_STATE_SUCCEEDED);
  CHECK(end->candidates() == 6);
  CHECK(end->faster() == 3);
  // Three programs: three evaluations, two timings (one did not verify).
  CHECK(rig.w1.evaluate_requests().size() + rig.w2.evaluate_requests().size() == 3);
  CHECK(rig.timing.time_requests().size() == 2);
  auto vs = rig.store->Variants("run-1", "");
  REQUIRE(vs.ok());
  REQUIRE(vs->size() == 6);
  std::map<std::string, int> copies;
  for (const auto& v : *vs) {
    CHECK(v.scored());
    const std::string& code = v.candidate().source();
    if (code == "fast") {
      CHECK(v.verdict() == v1::VERDICT_OK);
      CHECK(v.speedup() == 3.0);
      CHECK(v.reward().status() == v1::REWARD_STATUS_OK);
    } else if (code == "slow") {
      CHECK(v.speedup() == 0.5);
    } else {
      CHECK(v.verdict() == v1::VERDICT_WRONG_ANSWER);
    }
    if (absl::StartsWith(v.log(), "the same program as ")) ++copies[code];
  }
  CHECK(copies["fast"] == 2);
  CHECK(copies["slow"] == 1);
  CHECK(copies["other"] == 0);
  // Every copy of a program has the reward of its first.
  REQUIRE(rig.trainer.groups().size() == 1);
  const auto& g = rig.trainer.groups()[0];
  REQUIRE(g.completions_size() == 6);
  for (int i = 0; i < 6; ++i) {
    for (int j = 0; j < 6; ++j) {
      if ((*vs)[i].candidate().source() == (*vs)[j].candidate().source()) {
        CHECK((*vs)[i].reward().reward() == (*vs)[j].reward().reward());
      }
    }
  }
  double counted = -1;
  for (const auto& family : registry.Collect()) {
    if (family.name == "crl_orchestrator_copies_scored_total") counted = family.metric.at(0).counter.value;
  }
  CHECK(counted == 3);
}

TEST_CASE("a copy whose first was an infrastructure failure is scored itself", "[orchestrator]") {
  Rig rig;
  rig.prompt.Push(Parsed("fast"));
  rig.prompt.Push(Parsed("fast"));
  // The first copy: INFRA_ERROR on both workers (max_infra_attempts 2).
  rig.w1.Push(Verdict(v1::VERDICT_INFRA_ERROR));
  rig.w2.Push(Verdict(v1::VERDICT_INFRA_ERROR));
  // The second: its own evaluation and timing.
  rig.w1.Push(Verdict(v1::VERDICT_OK));
  rig.w2.Push(Verdict(v1::VERDICT_OK));
  rig.timing.Push(Timed(2.0));
  ExecutorOptions eo;
  eo.parallel_candidates = 1;
  RunExecutor ex(rig.services(), rig.store.get(), &rig.clock, eo, nullptr);
  std::atomic<bool> stopping{false};
  auto end = ex.Execute(rig.NewRun(Spec("contrastive-rl", 1, 2)), RequestContext::Background(), stopping);
  REQUIRE(end.ok());
  CHECK(end->infra_failures() == 1);
  CHECK(end->faster() == 1);
  CHECK(rig.timing.time_requests().size() == 1);
}

}  // namespace
}  // namespace crl::orchestrator
