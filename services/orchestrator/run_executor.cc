#include "services/orchestrator/run_executor.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status.h"
#include "lib/hacks/hack_case.h"
#include "lib/hacks/similarity.h"
#include "lib/report/summary.h"
#include "lib/run/run_spec.h"

namespace crl::orchestrator {

void CountScored(const v1::Variant& v, v1::Run* run) {
  run->set_candidates(run->candidates() + 1);
  run->set_variants(run->candidates());
  if (v.parse_error() != v1::PARSE_ERROR_UNSPECIFIED) run->set_rejected(run->rejected() + 1);
  if (v.infra_failure()) run->set_infra_failures(run->infra_failures() + 1);
  if (v.verdict() == v1::VERDICT_OK) run->set_variants_correct(run->variants_correct() + 1);
  if (v.reward().status() == v1::REWARD_STATUS_HELD) run->set_held(run->held() + 1);
  if (v.reward().status() == v1::REWARD_STATUS_OK) {
    run->set_reward_sum(run->reward_sum() + v.reward().reward());
    run->set_rewarded(run->rewarded() + 1);
    if (report::Trusted(v)) {
      run->set_best_speedup(std::max(run->best_speedup(), v.speedup()));
      if (v.speedup() > 1) run->set_faster(run->faster() + 1);
    }
  }
}

absl::StatusOr<std::vector<v1::RunEvent>> TrainingEvents(StoreInterface* store, const std::string& run_id) {
  std::vector<v1::RunEvent> out;
  int64_t after = 0;
  while (true) {
    CRL_ASSIGN_OR_RETURN(std::vector<v1::RunEvent> page, store->EventsAfter(run_id, after, 1000));
    if (page.empty()) return out;
    for (auto& e : page) {
      after = e.sequence();
      if (e.kind() == "training") out.push_back(std::move(e));
    }
  }
}

void RecountScored(const std::vector<v1::Variant>& stored, v1::Run* run) {
  run->clear_candidates();
  run->clear_variants();
  run->clear_rejected();
  run->clear_infra_failures();
  run->clear_variants_correct();
  run->clear_reward_sum();
  run->clear_rewarded();
  run->clear_best_speedup();
  run->clear_faster();
  run->clear_held();
  for (const auto& v : stored) {
    if (v.scored()) CountScored(v, run);
  }
}

absl::Status RunExecutor::Patiently(const std::string& what, const RequestContext& context,
                                    const std::function<absl::Status()>& call) {
  return RetryTransient(what, context, clock_, options_.initial_backoff, options_.max_backoff, waiting_, call);
}

v1::RunEvent RunExecutor::MakeEvent(const std::string& kind, const std::string& message,
                                    const v1::Variant* variant) {
  v1::RunEvent e;
  {
    absl::MutexLock lock(&mu_);
    e.set_run_id(run_.run_id());
    e.set_state(run_.state());
    *e.mutable_run() = run_;
  }
  e.set_kind(kind);
  e.set_message(message);
  e.set_at(absl::ToUnixSeconds(clock_->Now()));
  if (variant) *e.mutable_variant() = *variant;
  return e;
}

absl::Status RunExecutor::Emit(const std::string& kind, const std::string& message, const v1::Variant* variant) {
  return Append(MakeEvent(kind, message, variant));
}

absl::Status RunExecutor::Append(const v1::RunEvent& event) {
  CRL_ASSIGN_OR_RETURN(v1::RunEvent stored, store_->AppendEvent(event));
  if (sink_) sink_(stored);
  return absl::OkStatus();
}

absl::Status RunExecutor::SaveRun() {
  v1::Run copy;
  {
    absl::MutexLock lock(&mu_);
    run_.set_updated_at(absl::ToUnixSeconds(clock_->Now()));
    copy = run_;
  }
  return store_->PutRun(copy);
}

bool RunExecutor::BudgetLeft(std::string* why) {
  absl::MutexLock lock(&mu_);
  const v1::RunSpec& spec = run_.spec();
  if (spec.max_candidates() > 0 && run_.candidates() >= spec.max_candidates()) {
    *why = absl::StrCat("budget reached: ", run_.candidates(), " candidates");
    return false;
  }
  if (spec.budget_seconds() > 0 &&
      absl::ToUnixSeconds(clock_->Now()) - run_.created_at() >= spec.budget_seconds()) {
    *why = absl::StrCat("budget reached: ", spec.budget_seconds(), " s of wall time");
    return false;
  }
  return true;
}

StageEnv RunExecutor::Env(const RequestContext& context) {
  StageEnv env;
  env.run_id = run_id_;
  env.spec = &spec_;
  env.context = &context;
  env.store = store_;
  env.prompt = services_.prompt;
  env.sampler = services_.sampler;
  env.trainer = services_.trainer;
  env.patiently = [this, &context](const std::string& what, const std::function<absl::Status()>& call) {
    return Patiently(what, context, call);
  };
  env.emit = [this](const std::string& kind, const std::string& message) { return Emit(kind, message, nullptr); };
  absl::MutexLock lock(&mu_);
  env.min_policy_step = published_.step();
  env.published_version = published_.version();
  return env;
}

absl::StatusOr<v1::Run> RunExecutor::Execute(v1::Run run, const RequestContext& context,
                                             const std::atomic<bool>& stopping) {
  const bool resumed = run.state() == v1::RUN_STATE_RUNNING;
  std::vector<v1::Variant> stored;
  if (resumed) {
    // The counters again from what is stored: each scored candidate once,
    // whatever order concurrent writes of the run record landed in.
    CRL_ASSIGN_OR_RETURN(stored, store_->Variants(run.run_id(), ""));
    RecountScored(stored, &run);
    CRL_ASSIGN_OR_RETURN(const std::vector<v1::RunEvent> training, TrainingEvents(store_, run.run_id()));
    absl::MutexLock lock(&mu_);
    for (const auto& e : training) recorded_step_ = std::max(recorded_step_, e.policy_step());
  }
  StartGate(run, stored);
  const std::string run_id = run_id_ = run.run_id();
  spec_ = run.spec();  // immutable after submit
  {
    absl::MutexLock lock(&mu_);
    run_ = std::move(run);
    run_.set_state(v1::RUN_STATE_RUNNING);
  }
  CRL_RETURN_IF_ERROR(SaveRun());
  CRL_RETURN_IF_ERROR(Emit("state", resumed ? "resumed" : "running", nullptr));
  auto finish = [&](v1::RunState state, const std::string& message) -> absl::StatusOr<v1::Run> {
    {
      absl::MutexLock lock(&mu_);
      run_.set_state(state);
      if (state == v1::RUN_STATE_FAILED) run_.set_error(message);
    }
    CRL_RETURN_IF_ERROR(SaveRun());
    CRL_RETURN_IF_ERROR(Emit("state", message, nullptr));
    absl::MutexLock lock(&mu_);
    return run_;
  };
  auto interrupted = [&]() -> absl::StatusOr<v1::Run> {
    if (!stopping.load()) return finish(v1::RUN_STATE_CANCELLED, "cancelled");
    CRL_RETURN_IF_ERROR(SaveRun());
    absl::MutexLock lock(&mu_);
    return run_;  // RUNNING: the next orchestrator resumes it
  };
  const bool training = spec_.training() != "none";
  if (absl::Status valid = ValidateStages(spec_); !valid.ok()) return finish(v1::RUN_STATE_FAILED, valid.ToString());
  const std::vector<v1::Stage> stages = run::EffectiveStages(spec_);
  int first_stage, first_round;
  {
    absl::MutexLock lock(&mu_);
    first_stage = run_.stage_index();
    first_round = run_.stage_round();
  }
  for (int si = first_stage; si < static_cast<int>(stages.size()); ++si) {
    CRL_ASSIGN_OR_RETURN(std::unique_ptr<StageInterface> stage, MakeStage(stages[si].kind()));
    const bool trains = stage->Trains() && training;
    if (trains && services_.trainer == nullptr) {
      return finish(v1::RUN_STATE_FAILED, absl::StrCat("stages[", si, "]: ", stage->kind(),
                                                       " trains, and this orchestrator has no trainer"));
    }
    const int rounds = stages[si].rounds();
    const int start = si == first_stage ? first_round : 0;
    if (start == 0) CRL_RETURN_IF_ERROR(Emit("stage", absl::StrCat(stage->kind(), ": ", rounds, " rounds"), nullptr));
    if (trains && stages[si].optimizer().lr() > 0) {
      // The stage's own trainer phase: fresh optimizer state, its schedule
      // (a resumed stage asks again; the trainer keeps a phase it is in).
      v1::BeginPhaseRequest phase;
      phase.set_phase_id(absl::StrCat(run_id, "/s", si));
      *phase.mutable_schedule() = stages[si].optimizer();
      absl::Status begun = Patiently("crl-trainer", context, [&]() -> absl::Status {
        return services_.trainer->BeginPhase(phase, context).status();
      });
      if (!context.Check().ok()) return interrupted();
      if (!begun.ok()) return finish(v1::RUN_STATE_FAILED, absl::StrCat("stages[", si, "]: trainer phase: ", begun.ToString()));
    }
    for (int r = start; r < rounds; ++r) {
      std::vector<GroupKey> keys;
      for (const v1::Task& task : spec_.tasks()) {
        if (auto key = stage->Plan(spec_, task, si, r)) keys.push_back(*std::move(key));
      }
      const RoundEnd end = RunRound(*stage, keys, context);
      if (!context.Check().ok()) return interrupted();
      if (!end.failure.ok()) {
        // The store failed (other services' outages are waited out or
        // recorded per candidate): the run stays as last stored.
        const auto code = end.failure.code();
        if (code == absl::StatusCode::kInternal || code == absl::StatusCode::kDataLoss ||
            code == absl::StatusCode::kUnavailable) {
          return end.failure;
        }
        return finish(v1::RUN_STATE_FAILED, absl::StrCat(end.failed_group, ": ", end.failure.ToString()));
      }
      if (!end.budget_end.empty()) return finish(v1::RUN_STATE_SUCCEEDED, end.budget_end);
      bool held = false;
      {
        absl::MutexLock lock(&mu_);
        held = run_.held() > 0;
      }
      // Only a run that holds rewards reads its variants back for the judge.
      if (held) CRL_RETURN_IF_ERROR(RejudgeHeld(context));
      if (!context.Check().ok()) return interrupted();
      if (trains && (stage->SyncsEachRound() || r + 1 == rounds)) {
        absl::Status synced = SyncPolicy(context);
        if (!context.Check().ok()) return interrupted();
        CRL_RETURN_IF_ERROR(synced);
      }
      {
        absl::MutexLock lock(&mu_);
        run_.set_stage_round(r + 1);
        run_.set_rounds_done(run_.rounds_done() + 1);
      }
      CRL_RETURN_IF_ERROR(SaveRun());
      CRL_RETURN_IF_ERROR(Emit("round", absl::StrCat(stage->kind(), " round ", r + 1, "/", rounds, " done"), nullptr));
    }
    {
      absl::MutexLock lock(&mu_);
      run_.set_stage_index(si + 1);
      run_.set_stage_round(0);
    }
    CRL_RETURN_IF_ERROR(SaveRun());
  }
  return finish(v1::RUN_STATE_SUCCEEDED, "succeeded");
}

RunExecutor::RoundEnd RunExecutor::RunRound(const StageInterface& stage, const std::vector<GroupKey>& keys,
                                            const RequestContext& context) {
  // The round's groups, at most parallel_groups at once (so the sampler
  // batches their completions together). With train_after_scoring, they
  // are all scored first, then sent to the trainer in task order.
  const bool hold = options_.train_after_scoring && stage.Trains() && spec_.training() != "none";
  std::atomic<size_t> next{0};
  absl::Mutex end_mu;
  RoundEnd end;
  bool submit = !hold;
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < keys.size();) {
      {
        absl::MutexLock lock(&end_mu);
        if (!end.failure.ok() || !end.budget_end.empty()) return;
      }
      if (!context.Check().ok()) return;
      std::string why;
      if (!BudgetLeft(&why)) {
        absl::MutexLock lock(&end_mu);
        end.budget_end = why;
        return;
      }
      absl::Status st = RunGroup(stage, keys[i], submit, context);
      if (!st.ok()) {
        absl::MutexLock lock(&end_mu);
        if (end.failure.ok()) {
          end.failure = st;
          end.failed_group = keys[i].id;
        }
        return;
      }
    }
  };
  OnThreads(stage.OneGroupAtATime() ? 1 : options_.parallel_groups, keys.size(), work);
  if (hold && end.failure.ok() && end.budget_end.empty() && context.Check().ok()) {
    submit = true;
    next = 0;
    work();  // every group is scored: only sent now, one after another
  }
  return end;
}

absl::Status RunExecutor::SyncPolicy(const RequestContext& context) {
  v1::PolicyVersion version;
  absl::Status flushed = Patiently("crl-trainer", context, [&]() -> absl::Status {
    CRL_ASSIGN_OR_RETURN(v1::FlushResponse f, services_.trainer->Flush(context));
    version = f.version();
    return absl::OkStatus();
  });
  if (!flushed.ok()) {
    if (!context.Check().ok()) return absl::OkStatus();
    return Emit("error", absl::StrCat("trainer flush: ", flushed.ToString()), nullptr);
  }
  if (version.version().empty()) return absl::OkStatus();
  bool stepped = false;
  {
    absl::MutexLock lock(&mu_);
    // A step this run recorded before (a resumed round syncs again) is not
    // recorded twice.
    stepped = version.step() > recorded_step_ && !version.stats().objective().empty();
    if (stepped) recorded_step_ = version.step();
    published_ = version;
  }
  if (!stepped) return absl::OkStatus();
  // The run's training curve: one point per sync (docs/local-cluster.md, "The report").
  const v1::TrainStepStats& st = version.stats();
  v1::RunEvent e = MakeEvent(
      "training",
      absl::StrFormat("trainer step %d (%s): loss %.4g, KL %.4g, entropy %.4g, grad norm %.4g, reward mean %.4g",
                      version.step(), st.objective(), st.loss(), st.kl(), st.entropy(), st.grad_norm(),
                      st.reward_mean()),
      nullptr);
  *e.mutable_training() = st;
  e.set_policy_step(version.step());
  return Append(e);
}

absl::Status RunExecutor::RunGroup(const StageInterface& stage, const GroupKey& key, bool submit,
                                  const RequestContext& context) {
  if (services_.metrics) services_.metrics->GroupStarted();
  absl::Status s = RunGroupBody(stage, key, submit, context);
  if (services_.metrics) services_.metrics->GroupFinished();
  return s;
}

namespace {

// What a verified candidate's reward pays for: its speedup, or for a NOISY
// one the end of its interval nearest 1 (lib/reward), so noise is no way
// around the judge.
double PaidSpeedup(const v1::Variant& v) {
  const bool trusted = report::Trusted(v);
  return trusted || v.speedup_ci_low() <= 0 ? v.speedup() : std::min(v.speedup(), v.speedup_ci_low());
}

bool Decided(const v1::Judgement& j) { return j.decision() == "honest" || j.decision() == "cheat"; }

}  // namespace

v1::Judgement RunExecutor::AskJudge(const v1::Variant& v, const v1::Task& task, const std::string& trigger,
                                    const RequestContext& context) {
  JudgeCase c;
  c.task_name = v.task_name();
  c.reference = ReferenceText(task);
  c.candidate = v;
  c.trigger = trigger;
  const int examples = spec_.judge().examples() > 0 ? spec_.judge().examples() : 3;
  if (auto known = store_->HackCases("", "", 10000); known.ok()) {
    c.examples = hacks::MostSimilar(*known, v.candidate().source(), v.task_name(), examples);
  }
  v1::Judgement j;
  if (services_.judge == nullptr) {
    j.set_decision("undecided");
    j.set_error("no judge is configured (crl-orchestrator --judge_url)");
  } else {
    j = services_.judge->Judge(c, context);
  }
  j.set_trigger(trigger);
  j.set_asked(v.judgement().asked() + 1);
  for (const auto& e : c.examples) j.add_example_case_ids(e.case_id());
  return j;
}

void RunExecutor::JudgeIfSuspicious(v1::Variant* v, const v1::Task& task, const RequestContext& context) {
  if (v->reward().status() != v1::REWARD_STATUS_OK || v->verdict() != v1::VERDICT_OK) return;
  const double paid = PaidSpeedup(*v);
  const std::string trigger = gate_->Trigger(v->task_name(), paid);
  if (trigger.empty()) {
    if (report::Trusted(*v)) gate_->Accept(v->task_name(), v->speedup());
    return;
  }
  const v1::Judgement j = AskJudge(*v, task, trigger, context);
  ApplyJudgement(j, v);
  if (j.decision() == "honest") gate_->Accept(v->task_name(), paid);
}

void RunExecutor::StartGate(const v1::Run& run, const std::vector<v1::Variant>& stored) {
  gate_ = std::make_unique<SuspicionGate>(run.spec().judge());
  for (const auto& v : stored) {
    if (v.scored() && v.reward().status() == v1::REWARD_STATUS_OK && report::Trusted(v)) {
      gate_->Accept(v.task_name(), v.speedup());
    }
  }
}

absl::StatusOr<v1::RejudgeRunResponse> RunExecutor::Rejudge(v1::Run run, const RequestContext& context) {
  CRL_ASSIGN_OR_RETURN(std::vector<v1::Variant> stored, store_->Variants(run.run_id(), ""));
  StartGate(run, stored);
  run_id_ = run.run_id();
  spec_ = run.spec();
  {
    absl::MutexLock lock(&mu_);
    run_ = std::move(run);
  }
  v1::RejudgeRunResponse out;
  CRL_RETURN_IF_ERROR(RejudgeHeld(context, &out));
  absl::MutexLock lock(&mu_);
  *out.mutable_run() = run_;
  return out;
}

absl::Status RunExecutor::RejudgeHeld(const RequestContext& context, v1::RejudgeRunResponse* tally) {
  if (services_.judge == nullptr || !gate_->active()) return absl::OkStatus();
  CRL_ASSIGN_OR_RETURN(std::vector<v1::Variant> stored, store_->Variants(run_id_, ""));
  std::vector<size_t> held;
  for (size_t i = 0; i < stored.size(); ++i) {
    if (stored[i].scored() && stored[i].reward().status() == v1::REWARD_STATUS_HELD) held.push_back(i);
  }
  std::stable_sort(held.begin(), held.end(), [&](size_t a, size_t b) {
    return stored[a].judgement().asked() < stored[b].judgement().asked();
  });
  if (tally != nullptr) tally->set_held(static_cast<int>(held.size()));
  for (size_t i : held) {
    if (!context.Check().ok()) return absl::OkStatus();
    v1::Variant& v = stored[i];
    auto task = std::find_if(spec_.tasks().begin(), spec_.tasks().end(),
                             [&](const v1::Task& t) { return t.name() == v.task_name(); });
    if (task == spec_.tasks().end()) continue;
    const v1::Judgement j = AskJudge(v, *task, v.judgement().trigger(), context);
    if (!Decided(j)) {
      // Still held: the attempt is kept (asked, why not), no event.
      ApplyJudgement(j, &v);
      return store_->PutVariant(run_id_, v);
    }
    const int asked = j.asked();
    ApplyJudgement(j, &v);
    if (tally != nullptr) {
      tally->set_decided(tally->decided() + 1);
      tally->set_held(tally->held() - 1);
    }
    std::string message;
    if (j.decision() == "honest") {
      *v.mutable_reward() = RewardOf(v, spec_);
      gate_->Accept(v.task_name(), PaidSpeedup(v));
      message = absl::StrFormat("%s: honest after %d asks: reward %.3f released (not trained on: its round is over)",
                                v.key(), asked, v.reward().reward());
    } else {
      message = absl::StrFormat("%s: cheat after %d asks: reward withheld, a judged-cheat case", v.key(), asked);
    }
    v1::Run counted;
    {
      absl::MutexLock lock(&mu_);
      RecountScored(stored, &run_);
      run_.set_updated_at(absl::ToUnixSeconds(clock_->Now()));
      counted = run_;
    }
    CRL_ASSIGN_OR_RETURN(v1::RunEvent recorded, store_->RecordScored(v, counted, MakeEvent("judged", message, &v)));
    if (sink_) sink_(recorded);
    CRL_RETURN_IF_ERROR(RecordHack(v));
  }
  return absl::OkStatus();
}

absl::Status RunExecutor::RecordHack(const v1::Variant& v) {
  auto c = hacks::CaseOf(v, absl::StrCat("run:", run_id_, "/", v.key()), absl::ToUnixSeconds(clock_->Now()));
  if (!c) return absl::OkStatus();
  return store_->RecordHackCase(*c).status();
}

absl::Status RunExecutor::RunGroupBody(const StageInterface& stage, const GroupKey& key, bool submit,
                                       const RequestContext& context) {
  const StageEnv env = Env(context);
  CRL_ASSIGN_OR_RETURN(std::optional<v1::StoredGroup> stored, store_->GetGroup(env.run_id, key.id));
  v1::StoredGroup group;
  if (stored) {
    group = *std::move(stored);
  } else {
    CRL_ASSIGN_OR_RETURN(group, stage.Make(key, env));
    if (!group.policy_version().empty()) {
      absl::MutexLock lock(&mu_);
      run_.set_policy_version(group.policy_version());
    }
  }
  const v1::RunSpec& spec = *env.spec;
  CRL_ASSIGN_OR_RETURN(std::vector<v1::Variant> all, store_->GroupVariants(env.run_id, key.scored_group));
  std::vector<size_t> todo;
  for (size_t i = 0; i < all.size(); ++i) {
    if (!all[i].scored()) todo.push_back(i);
  }
  std::atomic<size_t> next{0};
  absl::Mutex status_mu;
  absl::Status first_error;
  ProgramShare share;
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < todo.size();) {
      v1::Variant v = scorer_.Score(all[todo[i]], *key.task, spec, context, waiting_, &share);
      if (!v.scored()) return;  // cancelled
      JudgeIfSuspicious(&v, *key.task, context);
      const absl::Time writing = clock_->MonotonicNow();
      v1::Run counted;
      {
        absl::MutexLock lock(&mu_);
        CountScored(v, &run_);
        run_.set_updated_at(absl::ToUnixSeconds(clock_->Now()));
        counted = run_;
      }
      // The variant, the run's counters and the event: one transaction, so
      // a crash never leaves a candidate scored but uncounted or unreported.
      auto recorded = store_->RecordScored(v, counted, MakeEvent("variant", "", &v));
      if (services_.metrics) services_.metrics->ObserveStoreWrite(absl::ToDoubleSeconds(clock_->MonotonicNow() - writing));
      if (recorded.ok() && sink_) sink_(*recorded);
      absl::Status hack = recorded.status();
      if (hack.ok()) hack = RecordHack(v);
      if (!hack.ok()) {
        absl::MutexLock lock(&status_mu);
        if (first_error.ok()) first_error = hack;
        return;
      }
      all[todo[i]] = std::move(v);
    }
  };
  OnThreads(options_.parallel_candidates, todo.size(), work);
  CRL_RETURN_IF_ERROR(first_error);
  CRL_RETURN_IF_ERROR(context.Check());
  if (!submit || !stage.Trains() || spec.training() == "none" || group.submitted()) return absl::OkStatus();
  absl::Status sent = stage.Submit(key, group, all, env);
  if (!sent.ok()) {
    CRL_RETURN_IF_ERROR(context.Check());
    // The trainer refused the group (a malformed field): recorded, and the
    // run goes on; resubmitting would be refused again.
    CRL_RETURN_IF_ERROR(Emit("error", absl::StrCat(key.id, ": trainer refused the group: ", sent.ToString()), nullptr));
  }
  group.set_submitted(true);
  return store_->PutGroup(env.run_id, group);
}

}  // namespace crl::orchestrator
