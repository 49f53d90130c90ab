#include "services/orchestrator/run_executor.h"

#include <algorithm>
#include <atomic>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/hash.h"
#include "common/status.h"
#include "lib/reward/names.h"
#include "lib/reward/rewards.h"
#include "lib/run/run_spec.h"

namespace crl::orchestrator {
namespace {

constexpr int kMaxPool = 64;  // crl-prompt's largest exemplar pool

bool Trains(const std::string& stage) {
  return stage == "contrastive-rl" || stage == "keep-successes" || stage == "sft";
}

// An sft example as the answer a model is asked for (prompts/*.tmpl: three
// sections, the code in one fenced block).
std::string SftAnswer(const v1::SftExample& e, const v1::Task& task, v1::Backend backend) {
  const std::string fence = task.format() == v1::TASK_FORMAT_KERNELBENCH ? "python"
                            : backend == v1::BACKEND_CUDA               ? "cuda"
                                                                        : "cpp";
  const std::string analysis = e.analysis().empty() ? "The reference leaves performance unused." : e.analysis();
  std::string code = e.source();
  if (!code.empty() && code.back() != '\n') code += '\n';
  return absl::StrCat("### Performance analysis\n", analysis, "\n\n### Algorithm design\n", analysis,
                      "\n\n### Code\n```", fence, "\n", code, "```\n");
}

bool HasSftExamples(const v1::RunSpec& spec, const std::string& task) {
  for (const auto& e : spec.sft_examples()) {
    if (e.task_name() == task) return true;
  }
  return false;
}

bool UsableExemplar(const v1::Variant& v) {
  return v.scored() && !v.infra_failure() && v.parse_error() == v1::PARSE_ERROR_UNSPECIFIED &&
         v.verdict() != v1::VERDICT_UNSPECIFIED && v.verdict() != v1::VERDICT_INFRA_ERROR;
}

}  // namespace

void CountScored(const v1::Variant& v, v1::Run* run) {
  run->set_candidates(run->candidates() + 1);
  run->set_variants(run->candidates());
  if (v.parse_error() != v1::PARSE_ERROR_UNSPECIFIED) run->set_rejected(run->rejected() + 1);
  if (v.infra_failure()) run->set_infra_failures(run->infra_failures() + 1);
  if (v.verdict() == v1::VERDICT_OK) run->set_variants_correct(run->variants_correct() + 1);
  if (v.reward().status() == v1::REWARD_STATUS_OK) {
    run->set_reward_sum(run->reward_sum() + v.reward().reward());
    run->set_rewarded(run->rewarded() + 1);
    if (v.verdict() == v1::VERDICT_OK) {
      run->set_best_speedup(std::max(run->best_speedup(), v.speedup()));
      if (v.speedup() > 1) run->set_faster(run->faster() + 1);
    }
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
  CRL_ASSIGN_OR_RETURN(v1::RunEvent stored, store_->AppendEvent(MakeEvent(kind, message, variant)));
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

absl::StatusOr<v1::Run> RunExecutor::Execute(v1::Run run, const RequestContext& context,
                                             const std::atomic<bool>& stopping) {
  const std::vector<v1::Stage> stages = run::EffectiveStages(run.spec());
  const bool resumed = run.state() == v1::RUN_STATE_RUNNING;
  if (resumed) {
    // The counters again from what is stored: each scored candidate once,
    // whatever order concurrent writes of the run record landed in.
    CRL_ASSIGN_OR_RETURN(std::vector<v1::Variant> stored, store_->Variants(run.run_id(), ""));
    run.clear_candidates();
    run.clear_variants();
    run.clear_rejected();
    run.clear_infra_failures();
    run.clear_variants_correct();
    run.clear_reward_sum();
    run.clear_rewarded();
    run.clear_best_speedup();
    run.clear_faster();
    for (const auto& v : stored) {
      if (v.scored()) CountScored(v, &run);
    }
  }
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
  const v1::RunSpec spec = run_.spec();  // immutable after submit
  int first_stage, first_round;
  {
    absl::MutexLock lock(&mu_);
    first_stage = run_.stage_index();
    first_round = run_.stage_round();
  }
  for (int si = first_stage; si < static_cast<int>(stages.size()); ++si) {
    const v1::Stage& stage = stages[si];
    if (Trains(stage.kind()) && spec.training() != "none" && services_.trainer == nullptr) {
      return finish(v1::RUN_STATE_FAILED,
                    absl::StrCat("stages[", si, "]: ", stage.kind(), " trains, and this orchestrator has no trainer"));
    }
    const int start = si == first_stage ? first_round : 0;
    if (start == 0) CRL_RETURN_IF_ERROR(Emit("stage", absl::StrCat(stage.kind(), ": ", stage.rounds(), " rounds"), nullptr));
    for (int r = start; r < stage.rounds(); ++r) {
      // The round's groups, one per task, at most parallel_groups at once
      // (so the sampler batches their completions together).
      std::vector<GroupKey> keys;
      for (const v1::Task& task : spec.tasks()) {
        if (stage.kind() == "sft" && !HasSftExamples(spec, task.name())) continue;
        GroupKey key{si, stage.kind(), r, &task, absl::StrCat("s", si, "/r", r, "/", task.name()), ""};
        // An sft stage scores its examples once, in round 0; later rounds
        // (epochs) reuse those scores.
        key.scored_group = stage.kind() == "sft" ? absl::StrCat("s", si, "/r0/", task.name()) : key.id;
        keys.push_back(std::move(key));
      }
      std::atomic<size_t> next{0};
      absl::Mutex failed_mu;
      std::optional<std::pair<std::string, absl::Status>> failed;  // the first group that failed
      std::string budget_end;
      auto work = [&] {
        for (size_t i; (i = next.fetch_add(1)) < keys.size();) {
          {
            absl::MutexLock lock(&failed_mu);
            if (failed || !budget_end.empty()) return;
          }
          if (!context.Check().ok()) return;
          std::string why;
          if (!BudgetLeft(&why)) {
            absl::MutexLock lock(&failed_mu);
            budget_end = why;
            return;
          }
          absl::Status st = RunGroup(keys[i], context);
          if (!st.ok()) {
            absl::MutexLock lock(&failed_mu);
            if (!failed) failed.emplace(keys[i].id, st);
            return;
          }
        }
      };
      OnThreads(options_.parallel_groups, keys.size(), work);
      if (!context.Check().ok()) return interrupted();
      if (failed) {
        const absl::Status& st = failed->second;
        // The store failed (other services' outages are waited out or
        // recorded per candidate): the run stays as last stored.
        if (st.code() == absl::StatusCode::kInternal || st.code() == absl::StatusCode::kDataLoss ||
            st.code() == absl::StatusCode::kUnavailable) {
          return st;
        }
        return finish(v1::RUN_STATE_FAILED, absl::StrCat(failed->first, ": ", st.ToString()));
      }
      if (!budget_end.empty()) return finish(v1::RUN_STATE_SUCCEEDED, budget_end);
      if (Trains(stage.kind()) && spec.training() != "none") {
        // The end of a round: train on whatever is queued, so the next round
        // samples from a policy that saw this one.
        std::string version;
        absl::Status flushed = Patiently("crl-trainer", context, [&]() -> absl::Status {
          CRL_ASSIGN_OR_RETURN(v1::FlushResponse f, services_.trainer->Flush(context));
          version = f.version().version();
          return absl::OkStatus();
        });
        if (!flushed.ok()) {
          if (!context.Check().ok()) return interrupted();
          CRL_RETURN_IF_ERROR(Emit("error", absl::StrCat("trainer flush: ", flushed.ToString()), nullptr));
        } else if (!version.empty()) {
          // ... and waits (a while) for the sampler to serve that version:
          // it follows the trainer asynchronously.
          const absl::Time until = clock_->MonotonicNow() + options_.sampler_catch_up;
          std::string serving;
          while (clock_->MonotonicNow() < until && context.Check().ok()) {
            auto p = services_.sampler->ListPolicies(context);
            if (p.ok() && p->policies_size() > 0) serving = p->policies(0).version();
            if (serving == version) break;
            clock_->SleepFor(absl::Milliseconds(100));
          }
          if (!context.Check().ok()) return interrupted();
          if (serving != version) {
            CRL_RETURN_IF_ERROR(Emit("waiting", absl::StrCat("the sampler serves policy version '", serving,
                                                             "', the trainer published '", version,
                                                             "'; the next round samples from what it serves"),
                                     nullptr));
          }
        }
      }
      {
        absl::MutexLock lock(&mu_);
        run_.set_stage_round(r + 1);
        run_.set_rounds_done(run_.rounds_done() + 1);
      }
      CRL_RETURN_IF_ERROR(SaveRun());
      CRL_RETURN_IF_ERROR(Emit("round", absl::StrCat(stage.kind(), " round ", r + 1, "/", stage.rounds(), " done"), nullptr));
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

absl::StatusOr<v1::StoredGroup> RunExecutor::SampleGroup(const GroupKey& key, const RequestContext& context) {
  v1::Run run;
  {
    absl::MutexLock lock(&mu_);
    run = run_;
  }
  CRL_ASSIGN_OR_RETURN(auto existing, store_->GetGroup(run.run_id(), key.id));
  if (existing) return *existing;
  const v1::RunSpec& spec = run.spec();
  const v1::Task& task = *key.task;
  if (key.stage == "sft" && key.round > 0) {
    // Later epochs train on round 0's verified examples again.
    CRL_ASSIGN_OR_RETURN(auto first, store_->GetGroup(run.run_id(), key.scored_group));
    if (!first) return absl::InternalError(absl::StrCat(key.id, ": epoch 0 group ", key.scored_group, " is missing"));
    v1::StoredGroup g = *first;
    g.set_group_id(key.id);
    g.set_round(key.round);
    g.set_submitted(false);
    CRL_RETURN_IF_ERROR(store_->PutGroup(run.run_id(), g));
    return g;
  }

  v1::BuildPromptRequest pr;
  *pr.mutable_task() = task;
  pr.set_backend(spec.backend());
  pr.set_seed(spec.seed() ^ StableHash64("prompt/" + key.id));
  pr.set_template_name(spec.template_name());
  pr.set_num_exemplars(spec.num_exemplars());
  *pr.mutable_selection() = spec.selection();
  if (key.stage == "keep-successes" || key.stage == "sft") {
    pr.mutable_selection()->set_strategy(v1::EXEMPLAR_STRATEGY_NONE);
  } else {
    CRL_RETURN_IF_ERROR(AddExemplarPool(run.run_id(), task, &pr));
  }
  v1::BuildPromptResponse prompt;
  CRL_RETURN_IF_ERROR(Patiently("crl-prompt", context, [&]() -> absl::Status {
    CRL_ASSIGN_OR_RETURN(prompt, services_.prompt->BuildPrompt(pr, context));
    return absl::OkStatus();
  }));

  if (key.stage == "sft") return StoreSftGroup(key, run, prompt);

  v1::SampleRequest sr;
  *sr.mutable_messages() = prompt.messages();
  if (prompt.messages_size() == 0) sr.set_prompt(prompt.prompt());
  sr.set_num_completions(spec.group_size() > 0 ? spec.group_size() : 4);
  sr.set_policy(spec.policy());
  sr.set_request_id(absl::StrCat(run.run_id(), "/", key.id));
  v1::SamplingParams* p = sr.mutable_params();
  p->set_temperature(spec.temperature() > 0 ? spec.temperature() : 1.0);
  p->set_max_tokens(spec.max_tokens() > 0 ? spec.max_tokens() : 512);
  p->set_seed(spec.seed() ^ StableHash64("sample/" + key.id));
  p->set_has_seed(true);
  v1::SampleResponse sampled;
  CRL_RETURN_IF_ERROR(Patiently("crl-sampler", context, [&]() -> absl::Status {
    CRL_ASSIGN_OR_RETURN(sampled, services_.sampler->Sample(sr, context));
    return absl::OkStatus();
  }));
  for (int i = 0; i < sampled.completions_size(); ++i) {
    const v1::Completion& c = sampled.completions(i);
    v1::Variant v;
    v.set_key(absl::StrCat(key.id, "/", i));
    v.set_variant_id(absl::StrCat(run.run_id(), "/", v.key()));
    v.set_task_name(task.name());
    v.set_round(key.round);
    v.set_stage(key.stage);
    v.set_index(i);
    v.set_completion(c.text());
    *v.mutable_token_ids() = c.token_ids();
    *v.mutable_logprobs() = c.token_logprobs();
    v.set_policy_version(c.policy_version().empty() ? sampled.policy_version() : c.policy_version());
    CRL_RETURN_IF_ERROR(store_->PutVariant(run.run_id(), v));
  }
  v1::StoredGroup g;
  g.set_group_id(key.id);
  g.set_task_name(task.name());
  g.set_stage(key.stage);
  g.set_round(key.round);
  g.set_prompt(prompt.prompt());
  *g.mutable_prompt_token_ids() = sampled.prompt_token_ids();
  g.set_policy_version(sampled.policy_version());
  *g.mutable_exemplar_ids() = prompt.exemplar_ids();
  // The group is written last: a crash before this line samples it again.
  CRL_RETURN_IF_ERROR(store_->PutGroup(run.run_id(), g));
  {
    absl::MutexLock lock(&mu_);
    run_.set_policy_version(sampled.policy_version());
  }
  return g;
}

absl::Status RunExecutor::AddExemplarPool(const std::string& run_id, const v1::Task& task,
                                          v1::BuildPromptRequest* request) {
  CRL_ASSIGN_OR_RETURN(std::vector<v1::Variant> seen, store_->Variants(run_id, task.name()));
  std::vector<const v1::Variant*> usable;
  for (const auto& v : seen) {
    if (UsableExemplar(v)) usable.push_back(&v);
  }
  // The most recent ones when there are more than a prompt may carry.
  const size_t from = usable.size() > kMaxPool ? usable.size() - kMaxPool : 0;
  for (size_t i = from; i < usable.size(); ++i) {
    const v1::Variant& v = *usable[i];
    v1::Exemplar* e = request->add_pool();
    e->set_variant_id(v.key());
    e->set_source(v.candidate().source());
    e->set_verdict(v.verdict());
    e->set_speedup(v.speedup());
    *e->mutable_flags() = v.flags();
    e->set_analysis(v.analysis());
    e->set_policy_version(v.policy_version());
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::StoredGroup> RunExecutor::StoreSftGroup(const GroupKey& key, const v1::Run& run,
                                                             const v1::BuildPromptResponse& prompt) {
  const v1::Task& task = *key.task;
  int index = 0;
  for (const v1::SftExample& e : run.spec().sft_examples()) {
    if (e.task_name() != task.name()) continue;
    v1::Variant v;
    v.set_key(absl::StrCat(key.id, "/", index));
    v.set_variant_id(absl::StrCat(run.run_id(), "/", v.key()));
    v.set_task_name(task.name());
    v.set_round(key.round);
    v.set_stage(key.stage);
    v.set_index(index++);
    v.set_completion(SftAnswer(e, task, run.spec().backend()));
    v.set_policy_version("sft");
    CRL_RETURN_IF_ERROR(store_->PutVariant(run.run_id(), v));
  }
  v1::StoredGroup g;
  g.set_group_id(key.id);
  g.set_task_name(task.name());
  g.set_stage(key.stage);
  g.set_round(key.round);
  g.set_prompt(prompt.prompt());
  *g.mutable_messages() = prompt.messages();
  CRL_RETURN_IF_ERROR(store_->PutGroup(run.run_id(), g));
  return g;
}

absl::Status RunExecutor::RunGroup(const GroupKey& key, const RequestContext& context) {
  if (services_.metrics) services_.metrics->GroupStarted();
  absl::Status s = RunGroupBody(key, context);
  if (services_.metrics) services_.metrics->GroupFinished();
  return s;
}

absl::Status RunExecutor::RunGroupBody(const GroupKey& key, const RequestContext& context) {
  CRL_ASSIGN_OR_RETURN(v1::StoredGroup group, SampleGroup(key, context));
  std::string run_id;
  v1::RunSpec spec;
  {
    absl::MutexLock lock(&mu_);
    run_id = run_.run_id();
    spec = run_.spec();
  }
  const bool training_off = spec.training() == "none";
  CRL_ASSIGN_OR_RETURN(std::vector<v1::Variant> all, store_->GroupVariants(run_id, key.scored_group));
  std::vector<v1::Variant> todo;
  for (auto& v : all) {
    if (!v.scored()) todo.push_back(std::move(v));
  }
  std::atomic<size_t> next{0};
  absl::Mutex status_mu;
  absl::Status first_error;
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < todo.size();) {
      v1::Variant v = scorer_.Score(todo[i], *key.task, spec, context, waiting_);
      if (!v.scored()) return;  // cancelled
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
      auto stored = store_->RecordScored(v, counted, MakeEvent("variant", "", &v));
      if (services_.metrics) services_.metrics->ObserveStoreWrite(absl::ToDoubleSeconds(clock_->MonotonicNow() - writing));
      absl::Status s = stored.status();
      if (s.ok() && sink_) sink_(*stored);
      if (!s.ok()) {
        absl::MutexLock lock(&status_mu);
        if (first_error.ok()) first_error = s;
        return;
      }
    }
  };
  OnThreads(options_.parallel_candidates, todo.size(), work);
  CRL_RETURN_IF_ERROR(first_error);
  CRL_RETURN_IF_ERROR(context.Check());
  if (!Trains(key.stage) || training_off || group.submitted()) return absl::OkStatus();
  return SubmitToTrainer(key, std::move(group), context);
}

absl::Status RunExecutor::SubmitToTrainer(const GroupKey& key, v1::StoredGroup group,
                                          const RequestContext& context) {
  std::string run_id;
  {
    absl::MutexLock lock(&mu_);
    run_id = run_.run_id();
  }
  CRL_ASSIGN_OR_RETURN(std::vector<v1::Variant> all, store_->GroupVariants(run_id, key.scored_group));
  absl::Status sent;
  if (key.stage == "contrastive-rl") {
    v1::SubmitGroupRequest req;
    req.set_run_id(run_id);
    req.set_group_id(absl::StrCat(run_id, "/", key.id));
    req.set_prompt(group.prompt());
    *req.mutable_prompt_token_ids() = group.prompt_token_ids();
    req.set_policy_version(group.policy_version());
    for (const auto& v : all) {
      if (v.infra_failure() || v.token_ids_size() == 0) continue;
      v1::ScoredCompletion* c = req.add_completions();
      c->set_completion(v.completion());
      *c->mutable_token_ids() = v.token_ids();
      *c->mutable_behaviour_logprobs() = v.logprobs();
      *c->mutable_reward() = v.reward();
      c->set_completion_id(v.variant_id());
    }
    sent = Patiently("crl-trainer", context, [&]() -> absl::Status {
      return services_.trainer->SubmitGroup(req, context).status();
    });
  } else {  // keep-successes, sft: what verified honestly, as supervised examples
    v1::SubmitExamplesRequest req;
    req.set_run_id(run_id);
    for (const auto& v : all) {
      // Verified. A sampled answer must also carry no flag that says it may
      // cheat (a NOISY timing does not make a correct answer worth less as
      // an example); the spec author's sft examples are vouched for, and a
      // flag on their timing (a loaded machine's host timer) says nothing of
      // what they teach.
      if (v.verdict() != v1::VERDICT_OK || v.infra_failure()) continue;
      if (key.stage != "sft" && std::any_of(v.flags().begin(), v.flags().end(), [](int f) {
            return IsHonestyFlag(static_cast<v1::Flag>(f));
          })) {
        continue;
      }
      if (key.stage != "sft" && v.token_ids_size() == 0) continue;
      v1::Example* e = req.add_examples();
      e->set_prompt(group.prompt());
      e->set_completion(v.completion());
      if (key.stage == "sft") {
        // Not sampled: the trainer renders the messages and tokenizes the
        // answer; each epoch is a new example.
        *e->mutable_messages() = group.messages();
        e->set_example_id(absl::StrCat(v.variant_id(), "/epoch", key.round));
        continue;
      }
      e->set_example_id(v.variant_id());
      *e->mutable_prompt_token_ids() = group.prompt_token_ids();
      *e->mutable_completion_token_ids() = v.token_ids();
    }
    if (req.examples_size() > 0) {
      sent = Patiently("crl-trainer", context, [&]() -> absl::Status {
        return services_.trainer->SubmitExamples(req, context).status();
      });
    }
  }
  if (!sent.ok()) {
    CRL_RETURN_IF_ERROR(context.Check());
    // The trainer refused the group (a malformed field): recorded, and the
    // run goes on; resubmitting would be refused again.
    CRL_RETURN_IF_ERROR(Emit("error", absl::StrCat(key.id, ": trainer refused the group: ", sent.ToString()), nullptr));
  }
  group.set_submitted(true);
  return store_->PutGroup(run_id, group);
}

}  // namespace crl::orchestrator
