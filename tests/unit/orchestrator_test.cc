// The orchestrator's logic on fakes (the in-memory store among them): run
// specs name their bad fields; the store is idempotent and ordered; a run scores every
// completion once (rejects never reach a worker, an infrastructure failure
// moves to another worker and is never a reward, a flagged timing is not
// rewarded as fast), sends its groups to the trainer, and resumes after an
// interruption without sampling, scoring or submitting anything twice.
#include <catch2/catch.hpp>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "lib/run/run_spec.h"
#include "services/orchestrator/orchestrator.h"
#include "services/orchestrator/run_executor.h"
#include "services/orchestrator/stages/group_io.h"
#include "tests/support/temp_dir.h"
#include "tests/support/orchestrator_rig.h"

namespace crl::orchestrator {
namespace {

namespace fs = std::filesystem;

using crl::testing::TempDir;  // tests/support/temp_dir.h

TEST_CASE("run specs: files resolve tasks, and errors name the field", "[orchestrator]") {
  TempDir d("orch");
  fs::create_directories(d.path() + "/t1");
  std::ofstream(d.path() + "/t1/task.yaml") << "name: t1\n";
  fs::create_directories(d.path() + "/level1");
  std::ofstream(d.path() + "/level1/1_A.py") << "class Model: pass\n";
  std::ofstream(d.path() + "/level1/2_B.py") << "class Model: pass\n";
  auto spec = run::ParseRunSpec("tasks: [t1, level1]\nstages: [{kind: contrastive-rl, rounds: 2}]\n", d.path());
  REQUIRE(spec.ok());
  REQUIRE(spec->tasks_size() == 3);
  CHECK(spec->tasks(0).format() == v1::TASK_FORMAT_NATIVE);
  CHECK(spec->tasks(1).name() == "1_A");
  CHECK(spec->tasks(2).format() == v1::TASK_FORMAT_KERNELBENCH);

  // Stage kinds are the orchestrator's stage registry's to check.
  auto parsed = run::ParseRunSpec("tasks: [t1]\nstages:\n  - {kind: grpo, rounds: 1}\n  - {kind: ppo}\n", d.path());
  REQUIRE(parsed.ok());
  absl::Status stages = ValidateStages(*parsed);
  CHECK_THAT(std::string(stages.message()),
             Catch::Contains("stages[1].kind: 'ppo' is not sft, keep-successes, grpo, contrastive-rl, sample-only"));
  parsed = run::ParseRunSpec("tasks: [t1]\nstages: [{kind: sft}]\n", d.path());
  REQUIRE(parsed.ok());
  CHECK_THAT(std::string(ValidateStages(*parsed).message()), Catch::Contains("stages[0].kind: 'sft' needs sft_examples"));
  auto bad = run::ParseRunSpec("tasks: [t1]\ngroup_sise: 4\n", d.path(), "s.yaml");
  CHECK_THAT(std::string(bad.status().message()), Catch::Contains("s.yaml:2: group_sise: unknown field"));
  bad = run::ParseRunSpec("tasks: [missing]\n", d.path(), "s.yaml");
  CHECK_THAT(std::string(bad.status().message()), Catch::Contains("tasks[0]") && Catch::Contains("does not exist"));
  bad = run::ParseRunSpec("tasks: [t1]\nbudget: {seconds: -1}\n", d.path());
  CHECK_THAT(std::string(bad.status().message()), Catch::Contains("budget.seconds"));

  // sft_examples: a task's shipped candidates whose expected verdict is OK
  // (for the run's backend), with the analysis their first line gives.
  fs::create_directories(d.path() + "/t1/candidates");
  std::ofstream(d.path() + "/t1/candidates/expect.yaml")
      << "fast.cc: {verdict: OK, faster_than_reference: true}\nslow.cc: OK\nwrong.cc: WRONG_ANSWER\nfast.cu: OK\n";
  std::ofstream(d.path() + "/t1/candidates/fast.cc") << "// expect: OK \xe2\x80\x94 one pass per row\nint x;\n";
  std::ofstream(d.path() + "/t1/candidates/slow.cc") << "int y;\n";
  std::ofstream(d.path() + "/t1/candidates/wrong.cc") << "int z;\n";
  std::ofstream(d.path() + "/t1/candidates/fast.cu") << "int w;\n";
  auto sft = run::ParseRunSpec("tasks: [t1]\nsft_examples: shipped\nstages: [{kind: sft, rounds: 3}]\n", d.path());
  REQUIRE(sft.ok());
  REQUIRE(sft->sft_examples_size() == 2);
  CHECK(sft->sft_examples(0).task_name() == "t1");
  CHECK(sft->sft_examples(0).analysis() == "One pass per row");
  CHECK(sft->sft_examples(0).source() == "int x;\n");  // without the expect line
  CHECK(sft->sft_examples(1).source() == "int y;\n");
  CHECK(sft->sft_examples(1).analysis().empty());
  // shipped:PREFIX keeps the candidates whose file name starts with it.
  auto fast = run::ParseRunSpec("tasks: [t1]\nsft_examples: shipped:fast\nstages: [{kind: sft}]\n", d.path());
  REQUIRE(fast.ok());
  REQUIRE(fast->sft_examples_size() == 1);
  CHECK(fast->sft_examples(0).source() == "int x;\n");
  bad = run::ParseRunSpec("tasks: [t1]\nsft_examples: shipped:quick\nstages: [{kind: sft}]\n", d.path());
  CHECK_THAT(std::string(bad.status().message()), Catch::Contains("'shipped:quick' matches no shipped candidate"));
  // A JSON-lines file: each line names its task; errors name file and line.
  std::ofstream(d.path() + "/ex.jsonl") << "{\"task\": \"t1\", \"source\": \"int a;\"}\n\n{\"task\": \"t9\", \"source\": \"b\"}\n";
  bad = run::ParseRunSpec("tasks: [t1]\nsft_examples: ex.jsonl\nstages: [{kind: sft}]\n", d.path());
  CHECK_THAT(std::string(bad.status().message()), Catch::Contains("sft_examples[1].task: 't9' is not a task"));
  std::ofstream(d.path() + "/ex.jsonl") << "{\"task\": \"t1\", \"source\": \"int a;\"}\n{\"source\": \"b\"}\n";
  bad = run::ParseRunSpec("tasks: [t1]\nsft_examples: ex.jsonl\nstages: [{kind: sft}]\n", d.path());
  CHECK_THAT(std::string(bad.status().message()), Catch::Contains("ex.jsonl:2: needs \"task\" and \"source\""));
}

TEST_CASE("a round: rejects skip the worker, infra failures move and are never rewards, flags withhold",
          "[orchestrator]") {
  Rig rig;
  // Four completions: a reject; an infra error on w1 then OK on w2 (fast);
  // a wrong answer; OK but side-stream flagged.
  rig.prompt.Push(Rejected());
  rig.prompt.Push(Parsed("fast"));
  rig.prompt.Push(Parsed("wrong"));
  rig.prompt.Push(Parsed("flagged"));
  // w1 fails first and is then cooled off (the fake clock stands still):
  // everything after goes to w2.
  rig.w1.Push(Verdict(v1::VERDICT_INFRA_ERROR));
  rig.w2.Push(Verdict(v1::VERDICT_OK));
  rig.w2.Push(Verdict(v1::VERDICT_WRONG_ANSWER));
  rig.w2.Push(Verdict(v1::VERDICT_OK));
  rig.timing.Push(Timed(2.0));
  rig.timing.Push(Timed(9.0, {v1::FLAG_SIDE_STREAM}));
  ExecutorOptions eo;
  eo.parallel_candidates = 1;  // the scripted fakes answer in order
  RunExecutor ex(rig.services(), rig.store.get(), &rig.clock, eo, nullptr);
  std::atomic<bool> stopping{false};
  auto end = ex.Execute(rig.NewRun(Spec("contrastive-rl", 1, 4)), RequestContext::Background(), stopping);
  REQUIRE(end.ok());
  CHECK(end->state() == v1::RUN_STATE_SUCCEEDED);
  CHECK(end->candidates() == 4);
  CHECK(end->rejected() == 1);
  CHECK(end->infra_failures() == 0);
  CHECK(end->faster() == 1);
  CHECK(end->best_speedup() == Approx(2.0));  // the flagged 9x is not trusted
  // The reject never reached a worker: 1 + 1 (retry) + 1 + 1 evaluations.
  CHECK(rig.w1.evaluate_requests().size() == 1);
  CHECK(rig.w2.evaluate_requests().size() == 3);
  auto vs = rig.store->Variants("run-1", "");
  REQUIRE(vs.ok());
  REQUIRE(vs->size() == 4);
  int withheld = 0;
  for (const auto& v : *vs) {
    CHECK(v.scored());
    if (v.reward().status() == v1::REWARD_STATUS_WITHHELD) ++withheld;
  }
  CHECK(withheld == 1);
  // One GRPO group with all four completions and their rewards.
  REQUIRE(rig.trainer.groups().size() == 1);
  CHECK(rig.trainer.groups()[0].completions_size() == 4);
  CHECK(rig.trainer.groups()[0].group_id() == "run-1/s0/r0/row_sum");
}

TEST_CASE("a run's rewards are computed with its spec's reward parameters", "[orchestrator]") {
  Rig rig;
  rig.prompt.Push(Parsed("fast"));
  rig.prompt.Push(Parsed("wrong"));
  rig.w1.Push(Verdict(v1::VERDICT_OK));
  rig.w1.Push(Verdict(v1::VERDICT_WRONG_ANSWER));
  rig.timing.Push(Timed(4.0));
  v1::RunSpec spec = Spec("grpo", 1, 2);
  spec.set_reward_preset(v1::REWARD_PRESET_CUDA_L1);
  spec.mutable_reward_params()->set_clip(0.5);
  spec.mutable_reward_params()->set_incorrect_reward(-0.25);
  ExecutorOptions eo;
  eo.parallel_candidates = 1;
  RunExecutor ex(rig.services(), rig.store.get(), &rig.clock, eo, nullptr);
  std::atomic<bool> stopping{false};
  auto end = ex.Execute(rig.NewRun(spec), RequestContext::Background(), stopping);
  REQUIRE(end.ok());
  auto vs = rig.store->Variants("run-1", "");
  REQUIRE(vs.ok());
  REQUIRE(vs->size() == 2);
  CHECK((*vs)[0].reward().reward() == Approx(0.5));  // 4x - 1 = 3, clipped at 0.5
  CHECK((*vs)[1].reward().reward() == Approx(-0.25));
  // The grpo stage prompts without exemplars and sends a GRPO group.
  REQUIRE(rig.prompt.build_requests().size() == 1);
  CHECK(rig.prompt.build_requests()[0].selection().strategy() == v1::EXEMPLAR_STRATEGY_NONE);
  REQUIRE(rig.trainer.groups().size() == 1);
  CHECK(rig.trainer.groups()[0].completions(0).reward().reward() == Approx(0.5));
}

TEST_CASE("after a training round the samples ask for the trainer's version; a lagging sampler is said",
          "[orchestrator]") {
  for (const bool lagging : {false, true}) {
    INFO("lagging sampler: " << lagging);
    Rig rig;
    for (int i = 0; i < 4; ++i) {
      rig.prompt.Push(Parsed("x"));
      rig.w1.Push(Verdict(v1::VERDICT_WRONG_ANSWER));
    }
    // Serving "1" is what the trainer publishes after round 1 (one group:
    // one step); a lagging sampler still serves "0".
    rig.sampler.set_version(lagging ? "0" : "1");
    ExecutorOptions eo;
    eo.parallel_candidates = 1;
    RunExecutor ex(rig.services(), rig.store.get(), &rig.clock, eo, nullptr);
    std::atomic<bool> stopping{false};
    auto end = ex.Execute(rig.NewRun(Spec("grpo", 2, 2)), RequestContext::Background(), stopping);
    REQUIRE(end.ok());
    CHECK(end->state() == v1::RUN_STATE_SUCCEEDED);
    // Round 1 asks for nothing; round 2 for the version round 1's flush
    // published. Nothing polled the sampler for its version.
    const auto requests = rig.sampler.requests();
    REQUIRE(requests.size() == 2);
    CHECK(requests[0].min_policy_step() == 0);
    CHECK(requests[1].min_policy_step() == 1);
    CHECK(rig.sampler.list_calls() == 0);
    int said = 0;
    auto events = rig.store->EventsAfter("run-1", 0, 1000);
    REQUIRE(events.ok());
    for (const auto& e : *events) {
      said += e.kind() == "waiting" &&
              e.message().find("sampled from policy version '0', the trainer published '1'") != std::string::npos;
    }
    CHECK(said == (lagging ? 1 : 0));
    // Each sync that brought a new trainer step is a point of the run's
    // training curve, with that step's statistics.
    std::vector<std::pair<int64_t, double>> curve;
    for (const auto& e : *events) {
      if (e.kind() == "training") curve.emplace_back(e.policy_step(), e.training().loss());
    }
    CHECK(curve == std::vector<std::pair<int64_t, double>>{{1, 1.0}, {2, 0.5}});
  }
}

TEST_CASE("a stage's own optimizer begins a trainer phase; the negative control permutes rewards", "[orchestrator]") {
  Rig rig;
  for (const char* code : {"a", "b", "c", "d"}) rig.prompt.Push(Parsed(code));
  for (int i = 0; i < 4; ++i) rig.w1.Push(Verdict(v1::VERDICT_OK));
  for (double x : {1.5, 2.0, 3.0, 0.5}) rig.timing.Push(Timed(x));
  v1::RunSpec spec = Spec("grpo", 1, 4);
  spec.mutable_stages(0)->mutable_optimizer()->set_lr(0.01);
  spec.mutable_stages(0)->mutable_optimizer()->set_total_steps(20);
  spec.set_control("permuted-rewards");
  spec.set_seed(5);
  ExecutorOptions eo;
  eo.parallel_candidates = 1;
  RunExecutor ex(rig.services(), rig.store.get(), &rig.clock, eo, nullptr);
  std::atomic<bool> stopping{false};
  auto end = ex.Execute(rig.NewRun(spec), RequestContext::Background(), stopping);
  REQUIRE(end.ok());
  CHECK(end->state() == v1::RUN_STATE_SUCCEEDED);
  auto phases = rig.trainer.phases();
  REQUIRE(phases.size() == 1);
  CHECK(phases[0].phase_id() == "run-1/s0");
  CHECK(phases[0].schedule().lr() == Approx(0.01));
  CHECK(phases[0].schedule().total_steps() == 20);
  CHECK(phases[0].restore_snapshot().empty());
  // The variants keep their true rewards; the trainer got the same rewards
  // in another order.
  auto vs = rig.store->Variants("run-1", "");
  REQUIRE(vs.ok());
  REQUIRE(rig.trainer.groups().size() == 1);
  const v1::SubmitGroupRequest group = rig.trainer.groups()[0];
  REQUIRE(group.completions_size() == 4);
  std::multiset<double> stored, sent;
  int moved = 0;
  for (int i = 0; i < 4; ++i) {
    stored.insert((*vs)[i].reward().reward());
    sent.insert(group.completions(i).reward().reward());
    CHECK(group.completions(i).completion_id() == (*vs)[i].variant_id());
    moved += group.completions(i).reward().reward() != (*vs)[i].reward().reward();
  }
  CHECK((*vs)[0].reward().reward() == Approx(0.5));
  CHECK(stored == sent);
  CHECK(moved > 0);

  // The untrained twin begins no phase and sends nothing.
  Rig twin;
  for (const char* code : {"a", "b", "c", "d"}) twin.prompt.Push(Parsed(code));
  for (int i = 0; i < 4; ++i) twin.w1.Push(Verdict(v1::VERDICT_OK));
  for (double x : {1.5, 2.0, 3.0, 0.5}) twin.timing.Push(Timed(x));
  spec.set_training("none");
  RunExecutor ex2(twin.services(), twin.store.get(), &twin.clock, eo, nullptr);
  REQUIRE(ex2.Execute(twin.NewRun(spec), RequestContext::Background(), stopping).ok());
  CHECK(twin.trainer.phases().empty());
  CHECK(twin.trainer.groups().empty());
}

TEST_CASE("infrastructure that stays down is recorded as such and never rewarded", "[orchestrator]") {
  Rig rig;
  rig.prompt.Push(Parsed("x"));
  // Both workers answer INFRA_ERROR (their queues are otherwise empty: UNAVAILABLE).
  rig.w1.Push(Verdict(v1::VERDICT_INFRA_ERROR));
  rig.w2.Push(Verdict(v1::VERDICT_INFRA_ERROR));
  RunExecutor ex(rig.services(), rig.store.get(), &rig.clock, {}, nullptr);
  std::atomic<bool> stopping{false};
  auto end = ex.Execute(rig.NewRun(Spec("contrastive-rl", 1, 1)), RequestContext::Background(), stopping);
  REQUIRE(end.ok());
  CHECK(end->infra_failures() == 1);
  CHECK(end->rewarded() == 0);
  auto vs = rig.store->Variants("run-1", "");
  REQUIRE(vs->size() == 1);
  CHECK((*vs)[0].infra_failure());
  CHECK((*vs)[0].reward().status() == v1::REWARD_STATUS_UNSPECIFIED);
  // The trainer got no completion for it (an infra failure is not a sample).
  REQUIRE(rig.trainer.groups().size() == 1);
  CHECK(rig.trainer.groups()[0].completions_size() == 0);
}

TEST_CASE("every worker or crl-timing unreachable: a candidate waits for them to come back and loses nothing",
          "[orchestrator]") {
  Rig rig;
  rig.prompt.Push(Parsed("fast"));
  // Both workers refuse connections three times (a kill -9 and a restart),
  // then w1 answers: more failures than max_infra_attempts (2), none an answer.
  for (auto* w : {&rig.w1, &rig.w2}) {
    for (int i = 0; i < 3; ++i) w->Push(absl::StatusOr<v1::EvaluateResponse>(absl::UnavailableError("connection refused")));
  }
  rig.w1.Push(Verdict(v1::VERDICT_OK));
  // crl-timing restarting too: two refusals, then its answer.
  for (int i = 0; i < 2; ++i) rig.timing.Push(absl::StatusOr<v1::TimeResponse>(absl::UnavailableError("restarting")));
  rig.timing.Push(Timed(2.0));
  std::vector<v1::RunEvent> events;
  const absl::Time start = rig.clock.MonotonicNow();
  RunExecutor ex(rig.services(), rig.store.get(), &rig.clock, {},
                 [&](const v1::RunEvent& e) { events.push_back(e); });
  std::atomic<bool> stopping{false};
  auto end = ex.Execute(rig.NewRun(Spec("contrastive-rl", 1, 1)), RequestContext::Background(), stopping);
  REQUIRE(end.ok());
  CHECK(end->infra_failures() == 0);
  CHECK(end->faster() == 1);
  CHECK(rig.w1.evaluate_requests().size() + rig.w2.evaluate_requests().size() == 7);
  // It waited (backing off, on the run's clock) and said so once.
  CHECK(rig.clock.MonotonicNow() - start >= absl::Milliseconds(600));
  int waiting_worker = 0, waiting_timing = 0;
  for (const auto& e : events) {
    if (e.kind() != "waiting") continue;
    waiting_worker += e.message().find("every worker") != std::string::npos;
    waiting_timing += e.message().find("crl-timing") != std::string::npos;
  }
  CHECK(waiting_worker == 1);
  CHECK(waiting_timing == 1);

  // Workers that stay unreachable: an infrastructure failure once the
  // patience is spent, saying so; no reward, and no spinning meanwhile.
  Rig down;
  down.prompt.Push(Parsed("x"));  // the fake workers' empty queues answer UNAVAILABLE
  ExecutorOptions eo;
  eo.worker_patience = absl::Seconds(30);
  RunExecutor ex2(down.services(), down.store.get(), &down.clock, eo, nullptr);
  auto ended = ex2.Execute(down.NewRun(Spec("contrastive-rl", 1, 1)), RequestContext::Background(), stopping);
  REQUIRE(ended.ok());
  CHECK(ended->infra_failures() == 1);
  CHECK(ended->rewarded() == 0);
  auto vs = down.store->Variants("run-1", "");
  REQUIRE(vs->size() == 1);
  CHECK_THAT((*vs)[0].infra_detail(), Catch::Contains("every worker unreachable for 30s"));
  const size_t tries = down.w1.evaluate_requests().size() + down.w2.evaluate_requests().size();
  CHECK(tries >= 6);
  CHECK(tries <= 40);
}

// Two contrastive-RL rounds of two completions each, all four parsed and
// wrong on w1.
v1::Run WrongAnswersRun(Rig* rig) {
  // Four programs, so none is a copy of another (copies are scored once).
  for (int i = 0; i < 4; ++i) rig->prompt.Push(Parsed(absl::StrCat("code", i)));
  for (int i = 0; i < 4; ++i) rig->w1.Push(Verdict(v1::VERDICT_WRONG_ANSWER));
  return rig->NewRun(Spec("contrastive-rl", 2, 2));
}

TEST_CASE("an interrupted run resumes without sampling, scoring or submitting twice", "[orchestrator]") {
  Rig rig;
  ExecutorOptions one;
  one.parallel_candidates = 1;
  std::atomic<bool> stopping{false};
  v1::Run run = WrongAnswersRun(&rig);
  {
    // The first executor is stopped (orchestrator shutdown) after its first
    // variant: the run stays RUNNING.
    RequestContext ctx;
    int seen = 0;
    RunExecutor ex(rig.services(), rig.store.get(), &rig.clock, one, [&](const v1::RunEvent& e) {
      if (e.kind() == "variant" && ++seen == 1) {
        stopping = true;
        ctx.Cancel();
      }
    });
    auto end = ex.Execute(run, ctx, stopping);
    REQUIRE(end.ok());
    CHECK(end->state() == v1::RUN_STATE_RUNNING);
    CHECK(end->candidates() == 1);
  }
  CHECK(rig.sampler.requests().size() == 1);
  stopping = false;
  auto stored = rig.store->GetRun("run-1");
  REQUIRE(stored.ok());
  RunExecutor ex(rig.services(), rig.store.get(), &rig.clock, one, nullptr);
  auto end = ex.Execute(*stored, RequestContext::Background(), stopping);
  REQUIRE(end.ok());
  CHECK(end->state() == v1::RUN_STATE_SUCCEEDED);
  CHECK(end->candidates() == 4);  // 2 rounds x 2, each once
  CHECK(rig.sampler.requests().size() == 2);  // round 0 was not sampled again
  CHECK(rig.w1.evaluate_requests().size() + rig.w2.evaluate_requests().size() == 4);
  CHECK(rig.trainer.groups().size() == 2);
  auto events = rig.store->EventsAfter("run-1", 0, 1000);
  REQUIRE(events.ok());
  int variants = 0;
  for (size_t i = 0; i < events->size(); ++i) {
    CHECK((*events)[i].sequence() == static_cast<int64_t>(i + 1));
    variants += (*events)[i].kind() == "variant";
  }
  CHECK(variants == 4);
}

TEST_CASE("a run resumed in a round it had trained records each trainer step once", "[orchestrator]") {
  Rig rig;
  ExecutorOptions one;
  one.parallel_candidates = 1;
  std::atomic<bool> stopping{false};
  v1::Run run = WrongAnswersRun(&rig);
  {
    // Stopped (an orchestrator shutdown) just after round 1's training
    // event, before the round is stored as done: round 1 runs again.
    RequestContext ctx;
    RunExecutor ex(rig.services(), rig.store.get(), &rig.clock, one, [&](const v1::RunEvent& e) {
      if (e.kind() != "training") return;
      stopping = true;
      ctx.Cancel();
    });
    auto end = ex.Execute(run, ctx, stopping);
    REQUIRE(end.ok());
    CHECK(end->state() == v1::RUN_STATE_RUNNING);
    CHECK(end->rounds_done() == 0);
  }
  stopping = false;
  auto stored = rig.store->GetRun("run-1");
  REQUIRE(stored.ok());
  RunExecutor ex(rig.services(), rig.store.get(), &rig.clock, one, nullptr);
  auto end = ex.Execute(*stored, RequestContext::Background(), stopping);
  REQUIRE(end.ok());
  CHECK(end->state() == v1::RUN_STATE_SUCCEEDED);
  CHECK(end->rounds_done() == 2);
  auto training = TrainingEvents(rig.store.get(), "run-1");
  REQUIRE(training.ok());
  std::vector<int64_t> steps;
  for (const auto& e : *training) steps.push_back(e.policy_step());
  CHECK(steps == std::vector<int64_t>{1, 2});
}

TEST_CASE("a round's groups are sampled at once, so the sampler can batch them", "[orchestrator]") {
  Rig rig;
  v1::RunSpec spec = Spec("sample-only", 1, 1);
  for (const char* name : {"b", "c"}) {
    auto* t = spec.add_tasks();
    t->set_path(std::string("/tasks/") + name);
    t->set_name(name);
    t->set_format(v1::TASK_FORMAT_NATIVE);
  }
  rig.sampler.HoldUntilConcurrent(3);
  for (int i = 0; i < 3; ++i) rig.prompt.Push(Rejected());
  ExecutorOptions eo;
  eo.parallel_groups = 3;
  RunExecutor ex(rig.services(), rig.store.get(), &rig.clock, eo, nullptr);
  std::atomic<bool> stopping{false};
  auto end = ex.Execute(rig.NewRun(spec), RequestContext::Background(), stopping);
  REQUIRE(end.ok());
  CHECK(end->state() == v1::RUN_STATE_SUCCEEDED);
  CHECK(end->candidates() == 3);
  CHECK(rig.sampler.max_concurrent() == 3);
}

TEST_CASE("an exemplar shows the speedup its reward paid: a NOISY one at its interval's end nearest 1",
          "[orchestrator]") {
  auto variant = [](double speedup, double low, double high, std::vector<v1::Flag> flags) {
    v1::Variant v;
    v.set_key("s0/r0/t/0");
    v.set_verdict(v1::VERDICT_OK);
    v.set_speedup(speedup);
    v.set_speedup_ci_low(low);
    v.set_speedup_ci_high(high);
    for (auto f : flags) v.add_flags(f);
    v.set_analysis("why");
    return v;
  };
  // Trusted: as measured.
  v1::Exemplar e = ExemplarOf(variant(2.0, 1.9, 2.1, {}));
  CHECK(e.speedup() == 2.0);
  CHECK(e.flags_size() == 0);
  CHECK(e.variant_id() == "s0/r0/t/0");
  CHECK(e.analysis() == "why");
  // NOISY, faster: the interval's low end, shown as a trusted line would be.
  e = ExemplarOf(variant(2.0, 1.4, 2.6, {v1::FLAG_NOISY}));
  CHECK(e.speedup() == 1.4);
  CHECK(e.flags_size() == 0);
  // NOISY across 1: as fast as the reference; NOISY and slower: the high end.
  CHECK(ExemplarOf(variant(1.1, 0.9, 1.3, {v1::FLAG_NOISY})).speedup() == 1.0);
  CHECK(ExemplarOf(variant(0.4, 0.3, 0.5, {v1::FLAG_NOISY})).speedup() == 0.5);
  // NOISY with no interval (its reward was withheld): still flagged.
  e = ExemplarOf(variant(2.0, 0, 0, {v1::FLAG_NOISY}));
  CHECK(e.speedup() == 2.0);
  REQUIRE(e.flags_size() == 1);
  // A flag that says it may cheat keeps every flag and the raw speedup.
  e = ExemplarOf(variant(9.0, 8.0, 10.0, {v1::FLAG_NOISY, v1::FLAG_SIDE_STREAM}));
  CHECK(e.speedup() == 9.0);
  CHECK(e.flags_size() == 2);
  // Not verified: as it is.
  v1::Variant wrong = variant(2.0, 1.4, 2.6, {v1::FLAG_NOISY});
  wrong.set_verdict(v1::VERDICT_WRONG_ANSWER);
  CHECK(ExemplarOf(wrong).flags_size() == 1);
}

// Records, at each group it is sent, how many candidates had been timed.
class TimedAtSubmitTrainer : public FakeTrainerClient {
 public:
  explicit TimedAtSubmitTrainer(const FakeTimingClient* timing) : timing_(timing) {}
  absl::StatusOr<v1::SubmitGroupResponse> SubmitGroup(const v1::SubmitGroupRequest& request,
                                                      const RequestContext& context) override {
    timed_at_submit.push_back(timing_->time_requests().size());
    return FakeTrainerClient::SubmitGroup(request, context);
  }
  std::vector<size_t> timed_at_submit;

 private:
  const FakeTimingClient* timing_;
};

TEST_CASE("train_after_scoring: a round's groups reach the trainer once all are timed, in task order",
          "[orchestrator]") {
  const bool hold = GENERATE(false, true);
  INFO("train_after_scoring " << hold);
  Rig rig;
  v1::RunSpec spec = Spec("contrastive-rl", 1, 1);
  for (const char* name : {"b", "c"}) {
    auto* t = spec.add_tasks();
    t->set_path(std::string("/tasks/") + name);
    t->set_name(name);
    t->set_format(v1::TASK_FORMAT_NATIVE);
  }
  for (int i = 0; i < 3; ++i) {
    rig.prompt.Push(Parsed(absl::StrCat("code", i)));
    rig.w1.Push(Verdict(v1::VERDICT_OK));
    rig.w2.Push(Verdict(v1::VERDICT_OK));
    rig.timing.Push(Timed(1.5));
  }
  TimedAtSubmitTrainer trainer(&rig.timing);
  Services services = rig.services();
  services.trainer = &trainer;
  ExecutorOptions eo;
  eo.parallel_groups = 1;  // one group after another: without the hold, each is sent before the next is timed
  eo.parallel_candidates = 1;
  eo.train_after_scoring = hold;
  RunExecutor ex(services, rig.store.get(), &rig.clock, eo, nullptr);
  std::atomic<bool> stopping{false};
  auto end = ex.Execute(rig.NewRun(spec), RequestContext::Background(), stopping);
  REQUIRE(end.ok());
  CHECK(end->state() == v1::RUN_STATE_SUCCEEDED);
  REQUIRE(trainer.groups().size() == 3);
  for (int i = 0; i < 3; ++i) {
    CHECK(trainer.groups()[i].group_id() == absl::StrCat("run-1/s0/r0/", spec.tasks(i).name()));
  }
  if (hold) {
    CHECK(trainer.timed_at_submit == std::vector<size_t>{3, 3, 3});
  } else {
    CHECK(trainer.timed_at_submit == std::vector<size_t>{1, 2, 3});
  }
}

TEST_CASE("sft: every epoch's examples reach the trainer in task order (steps are cut in arrival order)",
          "[orchestrator]") {
  Rig rig;
  v1::RunSpec spec = Spec("sft", 3, 1);
  spec.clear_tasks();
  const std::vector<std::string> names = {"t0", "t1", "t2", "t3"};
  for (const std::string& name : names) {
    auto* t = spec.add_tasks();
    t->set_path("/tasks/" + name);
    t->set_name(name);
    t->set_format(v1::TASK_FORMAT_NATIVE);
    auto* e = spec.add_sft_examples();
    e->set_task_name(name);
    e->set_source("code of " + name);
    rig.prompt.Push(Parsed("code of " + name));
    rig.timing.Push(Timed(1.5));
  }
  for (int i = 0; i < 4; ++i) {
    rig.w1.Push(Verdict(v1::VERDICT_OK));
    rig.w2.Push(Verdict(v1::VERDICT_OK));
  }
  ExecutorOptions eo;
  eo.parallel_groups = 4;  // ignored by sft: one group at a time
  RunExecutor ex(rig.services(), rig.store.get(), &rig.clock, eo, nullptr);
  std::atomic<bool> stopping{false};
  auto end = ex.Execute(rig.NewRun(spec), RequestContext::Background(), stopping);
  REQUIRE(end.ok());
  auto examples = rig.trainer.examples();
  REQUIRE(examples.size() == 12);
  for (size_t i = 0; i < examples.size(); ++i) {
    INFO(examples[i].example_id());
    CHECK_THAT(examples[i].example_id(), Catch::Contains("/" + names[i % 4] + "/"));
    CHECK_THAT(examples[i].example_id(), Catch::EndsWith("/epoch" + std::to_string(i / 4)));
  }
}

TEST_CASE("sft: examples verified once, then trained on every epoch; training none sends nothing",
          "[orchestrator]") {
  Rig rig;
  v1::RunSpec spec = Spec("sft", 3, 4);
  for (const char* code : {"good", "bad", "noisy", "side"}) {
    auto* e = spec.add_sft_examples();
    e->set_task_name("row_sum");
    e->set_source(code);
  }
  for (const char* code : {"good", "bad", "noisy", "side"}) rig.prompt.Push(Parsed(code));
  rig.w1.Push(Verdict(v1::VERDICT_OK));
  rig.w1.Push(Verdict(v1::VERDICT_WRONG_ANSWER));
  rig.w1.Push(Verdict(v1::VERDICT_OK));
  rig.w1.Push(Verdict(v1::VERDICT_OK));
  rig.timing.Push(Timed(1.5));
  // A flagged timing withholds the reward; the author's examples are still
  // trained on (keep-successes would drop the side-stream one: it may cheat).
  rig.timing.Push(Timed(1.1, {v1::FLAG_NOISY}));
  rig.timing.Push(Timed(9.0, {v1::FLAG_SIDE_STREAM}));
  ExecutorOptions eo;
  eo.parallel_candidates = 1;
  RunExecutor ex(rig.services(), rig.store.get(), &rig.clock, eo, nullptr);
  std::atomic<bool> stopping{false};
  auto end = ex.Execute(rig.NewRun(spec), RequestContext::Background(), stopping);
  REQUIRE(end.ok());
  CHECK(end->state() == v1::RUN_STATE_SUCCEEDED);
  // Four examples scored once (round 0), nothing sampled.
  CHECK(end->candidates() == 4);
  CHECK(rig.sampler.requests().empty());
  CHECK(rig.w1.evaluate_requests().size() + rig.w2.evaluate_requests().size() == 4);
  // The three verified ones reach the trainer once per epoch, as chat
  // messages with the answer in the template's three sections, under
  // distinct ids.
  auto examples = rig.trainer.examples();
  REQUIRE(examples.size() == 9);
  std::set<std::string> ids;
  int good = 0, noisy = 0;
  for (const auto& e : examples) {
    ids.insert(e.example_id());
    REQUIRE(e.messages_size() == 1);
    CHECK(e.messages(0).content() == "prompt 1 for row_sum");  // the fake's prompt
    good += e.completion().find("### Code\n```cpp\ngood\n```") != std::string::npos;
    noisy += e.completion().find("```cpp\nnoisy\n```") != std::string::npos;
  }
  CHECK(good == 3);
  CHECK(noisy == 3);
  CHECK(ids.size() == 9);
  // The last epoch's flush published a version; nothing polled the sampler.
  CHECK(rig.trainer.flushes() >= 1);
  CHECK(rig.sampler.list_calls() == 0);

  // The same spec with training none: verified, nothing sent anywhere.
  Rig twin;
  spec.set_training("none");
  for (const char* code : {"good", "bad", "noisy", "side"}) twin.prompt.Push(Parsed(code));
  twin.w1.Push(Verdict(v1::VERDICT_OK));
  twin.w1.Push(Verdict(v1::VERDICT_WRONG_ANSWER));
  twin.w1.Push(Verdict(v1::VERDICT_OK));
  twin.w1.Push(Verdict(v1::VERDICT_OK));
  twin.timing.Push(Timed(1.5));
  twin.timing.Push(Timed(1.1, {v1::FLAG_NOISY}));
  twin.timing.Push(Timed(9.0, {v1::FLAG_SIDE_STREAM}));
  RunExecutor ex2(twin.services(), twin.store.get(), &twin.clock, eo, nullptr);
  auto off = ex2.Execute(twin.NewRun(spec), RequestContext::Background(), stopping);
  REQUIRE(off.ok());
  CHECK(off->state() == v1::RUN_STATE_SUCCEEDED);
  CHECK(off->candidates() == 4);
  CHECK(twin.trainer.examples().empty());
  CHECK(twin.trainer.groups().empty());

  // With exemplars asked for, odd epochs train under the contrastive
  // prompt: round 0's scored examples are its pool (four epochs here: two
  // contrastive ones, each under the spec's selection).
  Rig contrast;
  spec.set_training("");
  spec.mutable_selection()->set_num_exemplars(2);
  spec.mutable_stages(0)->set_rounds(4);
  for (const char* code : {"good", "bad", "noisy", "side"}) contrast.prompt.Push(Parsed(code));
  contrast.w1.Push(Verdict(v1::VERDICT_OK));
  contrast.w1.Push(Verdict(v1::VERDICT_WRONG_ANSWER));
  contrast.w1.Push(Verdict(v1::VERDICT_OK));
  contrast.w1.Push(Verdict(v1::VERDICT_OK));
  contrast.timing.Push(Timed(1.5));
  contrast.timing.Push(Timed(1.1, {v1::FLAG_NOISY}));
  contrast.timing.Push(Timed(9.0, {v1::FLAG_SIDE_STREAM}));
  RunExecutor ex3(contrast.services(), contrast.store.get(), &contrast.clock, eo, nullptr);
  REQUIRE(ex3.Execute(contrast.NewRun(spec), RequestContext::Background(), stopping).ok());
  auto built = contrast.prompt.build_requests();
  REQUIRE(built.size() == 3);  // epoch 0 (plain), epochs 1 and 3 (contrastive); epoch 2 reuses epoch 0's
  CHECK(built[0].selection().strategy() == v1::EXEMPLAR_STRATEGY_NONE);
  CHECK(built[0].pool_size() == 0);
  for (size_t i : {1, 2}) {
    CHECK(built[i].selection().strategy() != v1::EXEMPLAR_STRATEGY_NONE);
    CHECK(built[i].pool_size() == 4);
    CHECK(built[i].selection().num_exemplars() == 2);
  }
  auto trained = contrast.trainer.examples();
  REQUIRE(trained.size() == 12);
  // Epoch 1's three examples share the contrastive prompt (the fake's second).
  int second = 0;
  for (const auto& e : trained) second += e.messages(0).content() == "prompt 2 for row_sum";
  CHECK(second == 3);

  // A stage has a kind, rounds and an optimizer, nothing else.
  TempDir d("orch");
  fs::create_directories(d.path() + "/t1");
  std::ofstream(d.path() + "/t1/task.yaml") << "name: t1\n";
  auto bad = run::ParseRunSpec("tasks: [t1]\nstages: [{kind: sft, epochs: 3}]\n", d.path());
  CHECK_THAT(std::string(bad.status().message()), Catch::Contains("stages[0].epochs: unknown"));
  auto phased = run::ParseRunSpec(
      "tasks: [t1]\nstages: [{kind: grpo, rounds: 2, optimizer: {lr: 0.001, warmup_steps: 2, total_steps: 30}}]\n"
      "reward: {preset: cuda-l1, clip: 2}\ncontrol: permuted-rewards\n",
      d.path());
  REQUIRE(phased.ok());
  CHECK(phased->stages(0).optimizer().lr() == Approx(0.001));
  CHECK(phased->stages(0).optimizer().warmup_steps() == 2);
  CHECK(phased->stages(0).optimizer().total_steps() == 30);
  CHECK_FALSE(phased->stages(0).optimizer().has_min_lr_ratio());
  CHECK(phased->reward_params().clip() == Approx(2));
  CHECK_FALSE(phased->reward_params().has_incorrect_reward());
  CHECK(phased->control() == "permuted-rewards");
  auto shown = run::ParseRunSpec("tasks: [t1]\nexemplars: {count: 3, trusted_only: true}\n", d.path());
  REQUIRE(shown.ok());
  CHECK(shown->selection().num_exemplars() == 3);
  CHECK(shown->selection().trusted_only());
  bad = run::ParseRunSpec("tasks: [t1]\nexemplars: {trusted_only: maybe}\n", d.path());
  CHECK_THAT(std::string(bad.status().message()), Catch::Contains("exemplars.trusted_only"));
  bad = run::ParseRunSpec("tasks: [t1]\nstages: [{kind: grpo, optimizer: {lr: 0.1, betas: 3}}]\n", d.path(), "s.yaml");
  CHECK_THAT(std::string(bad.status().message()), Catch::Contains("stages[0].optimizer.betas: unknown"));
  bad = run::ParseRunSpec("tasks: [t1]\nreward: {preset: cuda-l1, clip: 0}\n", d.path());
  CHECK_THAT(std::string(bad.status().message()), Catch::Contains("reward.clip: must be positive"));
  bad = run::ParseRunSpec("tasks: [t1]\ncontrol: shuffled\n", d.path());
  CHECK_THAT(std::string(bad.status().message()), Catch::Contains("control: 'shuffled' is not permuted-rewards"));
}

TEST_CASE("the orchestrator: idempotent submit, cancel, list, best variants", "[orchestrator]") {
  Rig rig;
  // A sampler that never answers keeps the run waiting until it is cancelled.
  Orchestrator o(rig.services(), rig.store.get(), RealClock::Get(), {});
  REQUIRE(o.Start().ok());
  v1::SubmitRunRequest req;
  *req.mutable_spec() = Spec("sample-only", 1, 1);
  req.set_idempotency_key("k1");
  rig.sampler.Push(absl::UnavailableError("down"));
  for (int i = 0; i < 100; ++i) rig.sampler.Push(absl::UnavailableError("down"));
  auto a = o.Submit(req);
  REQUIRE(a.ok());
  auto b = o.Submit(req);
  REQUIRE(b.ok());
  CHECK(a->run_id() == b->run_id());
  req.mutable_spec()->set_group_size(3);
  CHECK(o.Submit(req).status().code() == absl::StatusCode::kAlreadyExists);
  v1::SubmitRunRequest bad;
  CHECK(o.Submit(bad).status().code() == absl::StatusCode::kInvalidArgument);
  auto cancelled = o.Cancel(a->run_id());
  REQUIRE(cancelled.ok());
  CHECK(cancelled->state() == v1::RUN_STATE_CANCELLED);
  v1::ListRunsRequest lr;
  lr.set_state(v1::RUN_STATE_CANCELLED);
  auto list = o.List(lr);
  REQUIRE(list.ok());
  CHECK(list->runs_size() == 1);
  auto events = o.Events(a->run_id(), 0, absl::ZeroDuration());
  REQUIRE(events.ok());
  CHECK(events->back().message() == "cancelled");
  o.Stop();
}

TEST_CASE("ScoreCompletions: a run's scoring outside any run, stored nowhere, infrastructure never a reward",
          "[orchestrator]") {
  Rig rig;
  OrchestratorOptions oo;
  oo.executor.parallel_candidates = 1;  // the scripted fakes answer in order
  Orchestrator o(rig.services(), rig.store.get(), &rig.clock, oo);
  v1::ScoreCompletionsRequest req;
  *req.mutable_spec() = Spec("contrastive-rl", 1, 1);
  for (const char* text : {"fast", "prose", "down", "fast again"}) {
    v1::ScoreItem* item = req.add_items();
    item->set_task_name("row_sum");
    item->set_completion(text);
  }
  rig.prompt.Push(Parsed("fast"));
  rig.prompt.Push(Rejected());
  rig.prompt.Push(Parsed("down"));
  rig.prompt.Push(Parsed("fast"));  // the first item's program: scored once for both
  rig.w1.Push(Verdict(v1::VERDICT_OK));
  rig.timing.Push(Timed(2.0));
  // The third: INFRA_ERROR on both workers (max_infra_attempts 2).
  rig.w2.Push(Verdict(v1::VERDICT_INFRA_ERROR));
  rig.w1.Push(Verdict(v1::VERDICT_INFRA_ERROR));
  auto out = o.Score(req, RequestContext::Background());
  REQUIRE(out.ok());
  REQUIRE(out->results_size() == 4);
  CHECK(out->results(0).verdict() == v1::VERDICT_OK);
  CHECK(out->results(0).speedup() == Approx(2.0));
  CHECK(out->results(0).reward().status() == v1::REWARD_STATUS_OK);
  CHECK(out->results(0).reward().reward() == Approx(1.0));  // cuda-l1: speedup - 1
  CHECK(out->results(1).parse_error() == v1::PARSE_ERROR_NO_CODE_BLOCK);
  CHECK(out->results(1).reward().reward() == Approx(-1.0));
  CHECK(out->results(2).infra_failure());
  CHECK(out->results(2).reward().status() == v1::REWARD_STATUS_UNSPECIFIED);
  CHECK(out->results(3).speedup() == Approx(2.0));
  CHECK(out->results(3).reward().reward() == Approx(1.0));
  CHECK(out->results(3).completion() == "fast again");
  CHECK(rig.timing.time_requests().size() == 1);
  CHECK(rig.store->ListRuns(v1::RUN_STATE_UNSPECIFIED, 10, "")->empty());

  // A task the spec does not have, or nothing to score: the request is wrong.
  req.mutable_items(1)->set_task_name("matmul");
  auto bad = o.Score(req, RequestContext::Background());
  CHECK(bad.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(bad.status().message()), Catch::Contains("items[1].task_name: 'matmul' is not one of"));
  req.clear_items();
  CHECK(o.Score(req, RequestContext::Background()).status().code() == absl::StatusCode::kInvalidArgument);
  o.Stop();
}

}  // namespace
}  // namespace crl::orchestrator
