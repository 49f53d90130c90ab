// The judge on suspicious rewards inside a run (docs/hacks.md), over the
// orchestrator's fakes: what it is shown, how its answer decides a reward,
// what the hack database and the dashboards see, and a held reward asked
// again after each round until the judge decides.
#include <catch2/catch.hpp>

#include <prometheus/registry.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <set>
#include <string>
#include <thread>

#include "services/orchestrator/fake_judge.h"
#include "services/orchestrator/orchestrator.h"
#include "services/orchestrator/orchestrator_metrics.h"
#include "services/orchestrator/run_executor.h"
#include "tests/support/wait.h"
#include "tests/support/orchestrator_rig.h"

namespace crl::orchestrator {
namespace {

std::map<std::string, double> Counted(prometheus::Registry& registry) {
  std::map<std::string, double> counted;
  for (const auto& family : registry.Collect()) {
    if (family.name != "crl_orchestrator_hacks_total" && family.name != "crl_orchestrator_judgements_total") continue;
    for (const auto& m : family.metric) counted[family.name + "/" + m.label.at(0).value] = m.counter.value;
  }
  return counted;
}

bool HasFlag(const v1::Variant& v, v1::Flag f) {
  return std::find(v.flags().begin(), v.flags().end(), f) != v.flags().end();
}

TEST_CASE("suspicious rewards go to the judge: cheat withheld and recorded, honest kept, undecided held; hacks recorded",
          "[orchestrator]") {
  Rig rig;
  FakeJudge judge;
  judge.Push("cheat", "it returns a cached tensor");
  judge.Push("honest", "fused loops");
  // The third judged candidate gets no answer (undecided: held).
  for (const char* code : {"steady", "cached", "fused", "tiled", "wild", "side", "noisy"}) rig.prompt.Push(Parsed(code));
  for (int i = 0; i < 7; ++i) rig.w1.Push(Verdict(v1::VERDICT_OK));
  rig.timing.Push(Timed(2.0));   // below 3 x 1: the task's best becomes 2
  rig.timing.Push(Timed(9.0));   // above 3 x 2: judged cheat
  rig.timing.Push(Timed(5.5));   // below 3 x 2: not judged; the best becomes 5.5
  rig.timing.Push(Timed(17.0));  // above 3 x 5.5: judged honest; the best becomes 17
  rig.timing.Push(Timed(30.0));  // below 3 x 17, above the ceiling: judged, no answer
  rig.timing.Push(Timed(1.1, {v1::FLAG_SIDE_STREAM}));  // a trust flag: no judge, a hack case
  // NOISY, paid at its interval's low end, 30x: above the ceiling, judged.
  v1::TimeResponse noisy = Timed(40.0, {v1::FLAG_NOISY});
  noisy.set_speedup_ci_low(30.0);
  noisy.set_speedup_ci_high(50.0);
  rig.timing.Push(noisy);
  v1::RunSpec spec = Spec("contrastive-rl", 1, 7);
  spec.mutable_judge()->set_jump_factor(3);
  spec.mutable_judge()->set_ceiling(20);
  // A known case like the cheat, so the judge is shown it.
  v1::HackCase known;
  known.set_case_id("known1");
  known.set_task_name("row_sum");
  known.add_kinds("reused-output");
  known.set_source("cached");
  known.set_times_seen(1);
  REQUIRE(rig.store->RecordHackCase(known).ok());
  Services services = rig.services();
  services.judge = &judge;
  prometheus::Registry registry;
  OrchestratorMetrics metrics(&registry);
  ExecutorOptions eo;
  eo.parallel_candidates = 1;
  RunExecutor ex(services, rig.store.get(), &rig.clock, eo,
                 [&metrics](const v1::RunEvent& e) { metrics.ObserveEvent(e); });
  std::atomic<bool> stopping{false};
  auto end = ex.Execute(rig.NewRun(spec), RequestContext::Background(), stopping);
  REQUIRE(end.ok());
  CHECK(end->state() == v1::RUN_STATE_SUCCEEDED);
  auto vs = rig.store->Variants("run-1", "");
  REQUIRE(vs.ok());
  REQUIRE(vs->size() == 7);
  std::map<std::string, v1::Variant> by_code;
  for (const auto& v : *vs) by_code[v.candidate().source()] = v;
  CHECK(by_code["steady"].reward().status() == v1::REWARD_STATUS_OK);
  CHECK_FALSE(by_code["steady"].has_judgement());
  const v1::Variant& cheat = by_code["cached"];
  CHECK(cheat.reward().status() == v1::REWARD_STATUS_WITHHELD);
  CHECK(cheat.judgement().decision() == "cheat");
  CHECK_THAT(cheat.judgement().trigger(), Catch::Contains("3 x the run's best 2x"));
  CHECK(HasFlag(cheat, v1::FLAG_JUDGED_CHEAT));
  CHECK(by_code["fused"].reward().status() == v1::REWARD_STATUS_OK);
  CHECK_FALSE(by_code["fused"].has_judgement());
  CHECK(by_code["tiled"].reward().status() == v1::REWARD_STATUS_OK);
  CHECK(by_code["tiled"].judgement().decision() == "honest");
  const v1::Variant& held = by_code["wild"];
  CHECK(held.reward().status() == v1::REWARD_STATUS_HELD);
  CHECK(held.judgement().decision() == "undecided");
  CHECK_THAT(held.judgement().trigger(), Catch::Contains("ceiling"));
  // The judge saw the similar known case first, and the candidate's code.
  // Four asks in the round, then one after it: the first held reward asked
  // again stays undecided (nothing scripted), which ends that pass.
  const auto shown = judge.shown();
  REQUIRE(shown.size() == 5);
  CHECK(held.judgement().asked() + by_code["noisy"].judgement().asked() == 3);
  CHECK(by_code["noisy"].reward().status() == v1::REWARD_STATUS_HELD);
  CHECK_THAT(by_code["noisy"].judgement().trigger(), Catch::Contains("30x is above the ceiling"));
  REQUIRE_FALSE(shown[0].examples.empty());
  CHECK(shown[0].examples[0].case_id() == "known1");
  CHECK(shown[0].candidate.candidate().source() == "cached");
  CHECK(cheat.judgement().example_case_ids(0) == "known1");
  // The run counts only trusted rewards as fast (the cheat and the held
  // one are not), and the trainer is not given the held or withheld
  // rewards as numbers.
  CHECK(end->best_speedup() == Approx(17.0));
  CHECK(end->held() == 2);
  const auto groups = rig.trainer.groups();
  REQUIRE(groups.size() == 1);
  int not_ok = 0;
  for (const auto& c : groups[0].completions()) {
    if (c.reward().status() == v1::REWARD_STATUS_OK) continue;
    ++not_ok;
    CHECK(c.reward().reward() == 0);
  }
  CHECK(not_ok == 4);  // the cheat, the two held ones, the side stream
  // The hack database grew by the judged cheat and the side-stream case.
  auto cases = rig.store->HackCases("", "row_sum", 100);
  REQUIRE(cases.ok());
  std::set<std::string> kinds;
  for (const auto& c : *cases) kinds.insert(c.kinds().begin(), c.kinds().end());
  CHECK(kinds == std::set<std::string>{"judged-cheat", "reused-output", "side-stream"});
  auto judged = rig.store->HackCases("judged-cheat", "", 100);
  REQUIRE(judged->size() == 1);
  CHECK(judged->at(0).origin() == "run:run-1/" + cheat.key());
  CHECK(judged->at(0).judgement().reasoning() == "it returns a cached tensor");

  // Dashboards see the same: hacks by kind, judgements by decision.
  CHECK(Counted(registry) == std::map<std::string, double>{{"crl_orchestrator_hacks_total/judged-cheat", 1},
                                                 {"crl_orchestrator_hacks_total/side-stream", 1},
                                                 {"crl_orchestrator_judgements_total/cheat", 1},
                                                 {"crl_orchestrator_judgements_total/honest", 1},
                                                 {"crl_orchestrator_judgements_total/undecided", 2}});

  // A spec that asks for a judge is refused by an orchestrator without one.
  Orchestrator o(rig.services(), rig.store.get(), &rig.clock, {});
  v1::SubmitRunRequest req;
  *req.mutable_spec() = spec;
  auto refused = o.Submit(req);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(refused.status().message()), Catch::Contains("--judge_url"));
}

TEST_CASE("a held reward is asked about again after each round: honest releases it, cheat withholds it",
          "[orchestrator]") {
  Rig rig;
  FakeJudge judge;
  judge.Push("undecided");  // round 1: "wild" is held (the judge is down)
  judge.Push("undecided");  // after round 1: still down; "wild" stays held
  judge.Push("undecided");  // round 2: "bold" is held too
  judge.Push("cheat", "it skips the work");  // after round 2: "bold" (asked least) first
  judge.Push("honest", "vectorised rows");   // then "wild"
  for (const char* code : {"steady", "wild", "quick", "bold"}) rig.prompt.Push(Parsed(code));
  for (int i = 0; i < 4; ++i) rig.w1.Push(Verdict(v1::VERDICT_OK));
  rig.timing.Push(Timed(2.0));   // the task's best becomes 2
  rig.timing.Push(Timed(30.0));  // above the ceiling: judged
  rig.timing.Push(Timed(2.5));
  rig.timing.Push(Timed(25.0));  // above the ceiling: judged
  v1::RunSpec spec = Spec("contrastive-rl", 2, 2);
  spec.mutable_judge()->set_ceiling(20);
  Services services = rig.services();
  services.judge = &judge;
  prometheus::Registry registry;
  OrchestratorMetrics metrics(&registry);
  std::vector<v1::RunEvent> judged;
  ExecutorOptions eo;
  eo.parallel_candidates = 1;
  RunExecutor ex(services, rig.store.get(), &rig.clock, eo, [&](const v1::RunEvent& e) {
    metrics.ObserveEvent(e);
    if (e.kind() == "judged") judged.push_back(e);
  });
  std::atomic<bool> stopping{false};
  auto end = ex.Execute(rig.NewRun(spec), RequestContext::Background(), stopping);
  REQUIRE(end.ok());
  CHECK(end->state() == v1::RUN_STATE_SUCCEEDED);
  CHECK(judge.shown().size() == 5);

  auto vs = rig.store->Variants("run-1", "");
  REQUIRE(vs.ok());
  std::map<std::string, v1::Variant> by_code;
  for (const auto& v : *vs) by_code[v.candidate().source()] = v;
  // "wild": held twice, then cleared: the reward the scorer gives a 30x.
  const v1::Variant& wild = by_code["wild"];
  CHECK(wild.reward().status() == v1::REWARD_STATUS_OK);
  CHECK(wild.reward().reward() > by_code["steady"].reward().reward());
  CHECK(wild.reward().reward() == Approx(RewardOf(wild, spec).reward()));
  CHECK(wild.judgement().decision() == "honest");
  CHECK(wild.judgement().asked() == 3);
  CHECK_THAT(wild.judgement().trigger(), Catch::Contains("ceiling"));
  // "bold": held once, then found cheating: withheld, flagged, a case.
  const v1::Variant& bold = by_code["bold"];
  CHECK(bold.reward().status() == v1::REWARD_STATUS_WITHHELD);
  CHECK(bold.reward().reward() == 0);
  CHECK(bold.judgement().asked() == 2);
  CHECK(HasFlag(bold, v1::FLAG_JUDGED_CHEAT));
  auto cases = rig.store->HackCases("judged-cheat", "", 100);
  REQUIRE(cases.ok());
  REQUIRE(cases->size() == 1);
  CHECK(cases->at(0).origin() == "run:run-1/" + bold.key());

  // The run's counters and its events say so; the trainer got the held
  // rewards as held (their groups were sent when their rounds ended).
  CHECK(end->rewarded() == 3);
  CHECK(end->faster() == 3);
  CHECK(end->held() == 0);
  CHECK(end->best_speedup() == Approx(30.0));
  REQUIRE(judged.size() == 2);
  CHECK_THAT(judged[0].message(), Catch::Contains("cheat after 2 asks"));
  CHECK_THAT(judged[1].message(), Catch::Contains("honest after 3 asks"));
  CHECK(judged[1].run().rewarded() == 3);
  CHECK(judged[0].run().held() == 1);  // "wild" still held when "bold" was decided
  int held_sent = 0;
  for (const auto& g : rig.trainer.groups()) {
    for (const auto& c : g.completions()) held_sent += c.reward().status() == v1::REWARD_STATUS_HELD;
  }
  CHECK(held_sent == 2);
  CHECK(Counted(registry) == std::map<std::string, double>{{"crl_orchestrator_hacks_total/judged-cheat", 1},
                                                           {"crl_orchestrator_judgements_total/cheat", 1},
                                                           {"crl_orchestrator_judgements_total/honest", 1},
                                                           {"crl_orchestrator_judgements_total/undecided", 2}});
}

// "run-1"'s spec: two candidates, "wild"'s 30x above the judge's ceiling;
// the judge's first answer (in the round) is undecided, so the run ends
// holding that reward (EndHeldRun).
v1::RunSpec HeldRunSpec(Rig& rig, FakeJudge& judge) {
  judge.Push("undecided");
  for (const char* code : {"steady", "wild"}) rig.prompt.Push(Parsed(code));
  for (int i = 0; i < 2; ++i) rig.w1.Push(Verdict(v1::VERDICT_OK));
  rig.timing.Push(Timed(2.0));
  rig.timing.Push(Timed(30.0));
  v1::RunSpec spec = Spec("contrastive-rl", 1, 2);
  spec.mutable_judge()->set_ceiling(20);
  return spec;
}

void EndHeldRun(Rig& rig, const Services& services) {
  auto run = rig.store->GetRun("run-1");
  REQUIRE(run.ok());
  ExecutorOptions eo;
  eo.parallel_candidates = 1;
  RunExecutor ex(services, rig.store.get(), &rig.clock, eo, nullptr);
  std::atomic<bool> stopping{false};
  auto end = ex.Execute(*run, RequestContext::Background(), stopping);
  REQUIRE(end.ok());
  REQUIRE(end->state() == v1::RUN_STATE_SUCCEEDED);
  CHECK(end->rewarded() == 1);
  CHECK(end->held() == 1);
}

TEST_CASE("an ended run's held rewards are asked about again, periodically and on request (RejudgeRun)",
          "[orchestrator]") {
  Rig rig;
  FakeJudge judge;
  Services services = rig.services();
  services.judge = &judge;
  Orchestrator o(services, rig.store.get(), &rig.clock, {});
  // Queued or going: the run asks after each round itself.
  rig.NewRun(HeldRunSpec(rig, judge));
  auto early = o.Rejudge("run-1", RequestContext::Background());
  REQUIRE_FALSE(early.ok());
  CHECK(early.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(early.status().message()), Catch::Contains("RUN_STATE_QUEUED"));
  EndHeldRun(rig, services);

  // The periodic pass over ended runs (RejudgeEnded) asks about it: the
  // judge still has no answer.
  auto swept = o.RejudgeEnded(RequestContext::Background());
  REQUIRE(swept.ok());
  CHECK(*swept == 0);
  CHECK(judge.shown().size() == 3);
  // Nor on request: held, asked a fourth time.
  auto again = o.Rejudge("run-1", RequestContext::Background());
  REQUIRE(again.ok());
  CHECK(again->decided() == 0);
  CHECK(again->held() == 1);
  // Now it answers.
  judge.Push("honest", "one pass per row");
  auto decided = o.Rejudge("run-1", RequestContext::Background());
  REQUIRE(decided.ok());
  CHECK(decided->decided() == 1);
  CHECK(decided->held() == 0);
  CHECK(decided->run().state() == v1::RUN_STATE_SUCCEEDED);
  CHECK(decided->run().rewarded() == 2);
  CHECK(decided->run().held() == 0);
  CHECK(decided->run().best_speedup() == Approx(30.0));
  auto stored = rig.store->GetRun("run-1");
  REQUIRE(stored.ok());
  CHECK(stored->rewarded() == 2);
  auto events = rig.store->EventsAfter("run-1", 0, 1000);
  REQUIRE(events.ok());
  REQUIRE_FALSE(events->empty());
  CHECK(events->back().kind() == "judged");
  CHECK(events->back().variant().judgement().asked() == 5);
  CHECK(judge.shown().size() == 5);
  // Nothing left to ask, on request or by the periodic pass.
  auto none = o.Rejudge("run-1", RequestContext::Background());
  REQUIRE(none.ok());
  CHECK(none->decided() + none->held() == 0);
  swept = o.RejudgeEnded(RequestContext::Background());
  REQUIRE(swept.ok());
  CHECK(*swept == 0);
  CHECK(judge.shown().size() == 5);

  // A run that asked for no judge, an orchestrator without one, no such run.
  Orchestrator without(rig.services(), rig.store.get(), &rig.clock, {});
  auto no_judge = without.Rejudge("run-1", RequestContext::Background());
  CHECK(no_judge.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(no_judge.status().message()), Catch::Contains("--judge_url"));
  CHECK(o.Rejudge("run-9", RequestContext::Background()).status().code() == absl::StatusCode::kNotFound);
  CHECK(o.Rejudge("", RequestContext::Background()).status().code() == absl::StatusCode::kInvalidArgument);
}

TEST_CASE("the orchestrator's own thread asks about ended runs' held rewards every rejudge_every, and Stop ends it",
          "[orchestrator]") {
  Rig rig;
  FakeJudge judge;
  Services services = rig.services();
  services.judge = &judge;
  rig.NewRun(HeldRunSpec(rig, judge));
  EndHeldRun(rig, services);
  REQUIRE(judge.shown().size() == 2);  // in its round and after it
  auto held = [&] {
    auto run = rig.store->GetRun("run-1");
    return run.ok() ? run->held() : -1;
  };

  // 0: only on request; Start starts no thread.
  {
    Orchestrator o(services, rig.store.get(), &rig.clock, {});
    REQUIRE(o.Start().ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    o.Stop();
    CHECK(judge.shown().size() == 2);
    CHECK(held() == 1);
  }

  // Every 10 minutes of the (fake) clock: the first pass comes after them,
  // asks, and the honest answer releases the reward.
  judge.Push("honest", "one pass per row");
  OrchestratorOptions every;
  every.rejudge_every = absl::Minutes(10);
  Orchestrator o(services, rig.store.get(), &rig.clock, every);
  const absl::Time started = rig.clock.MonotonicNow();
  REQUIRE(o.Start().ok());
  CHECK(testing::Eventually([&] { return held() == 0; }, absl::Seconds(10), absl::Milliseconds(50)));
  CHECK(rig.clock.MonotonicNow() - started >= absl::Minutes(10));
  CHECK(judge.shown().size() == 3);
  auto run = rig.store->GetRun("run-1");
  REQUIRE(run.ok());
  CHECK(run->rewarded() == 2);
  // Nothing held: later passes ask nothing; Stop joins the thread.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  o.Stop();
  CHECK(judge.shown().size() == 3);
}

}  // namespace
}  // namespace crl::orchestrator
