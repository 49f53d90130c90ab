#include "services/orchestrator/scorer.h"

#include <algorithm>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/backoff.h"
#include "common/status.h"
#include "lib/reward/names.h"
#include "lib/reward/rewards.h"

namespace crl::orchestrator {

bool IsTransient(const absl::Status& s) {
  return s.code() == absl::StatusCode::kUnavailable || s.code() == absl::StatusCode::kDeadlineExceeded ||
         s.code() == absl::StatusCode::kResourceExhausted;
}

namespace {

// A candidate's wait for a service that cannot be reached (UNAVAILABLE: down
// or restarting; RESOURCE_EXHAUSTED: full): back-off from `initial` to `max`
// for up to `patience` from construction, one `waiting` event. Such waits use
// up none of the candidate's infra attempts.
class UnreachableWait {
 public:
  UnreachableWait(ClockInterface* clock, absl::Duration initial, absl::Duration max, absl::Duration patience,
                  std::string what, const OnWaiting& on_waiting)
      : clock_(clock),
        backoff_(initial, max),
        patience_(patience),
        ends_(clock->MonotonicNow() + patience),
        what_(std::move(what)),
        on_waiting_(on_waiting) {}

  static bool Unreachable(const absl::Status& s) {
    return s.code() == absl::StatusCode::kUnavailable || s.code() == absl::StatusCode::kResourceExhausted;
  }

  // Waits before the next try. False when the patience is spent (with
  // " (<what> unreachable for <patience>)" appended to *detail) or the run
  // refused the wait.
  bool Wait(const absl::Status& why, const RequestContext& context, std::string* detail) {
    const absl::Time now = clock_->MonotonicNow();
    if (now >= ends_) {
      absl::StrAppend(detail, " (", what_, " unreachable for ", absl::FormatDuration(patience_), ")");
      return false;
    }
    if (!told_ && on_waiting_) {
      if (!on_waiting_(what_, why).ok()) return false;
      told_ = true;
    }
    clock_->SleepFor(std::min({backoff_.Next(), ends_ - now, context.Remaining()}));
    return true;
  }

 private:
  ClockInterface* clock_;
  Backoff backoff_;
  absl::Duration patience_;
  absl::Time ends_;
  std::string what_;
  const OnWaiting& on_waiting_;
  bool told_ = false;
};

}  // namespace

void OnThreads(int parallelism, size_t items, const std::function<void()>& work) {
  const int n = std::max(1, std::min<int>(parallelism, static_cast<int>(items)));
  std::vector<std::thread> threads;
  for (int t = 1; t < n; ++t) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
}

absl::Status RetryTransient(const std::string& what, const RequestContext& context, ClockInterface* clock,
                            absl::Duration initial_backoff, absl::Duration max_backoff,
                            const OnWaiting& on_waiting, const std::function<absl::Status()>& call) {
  Backoff backoff(initial_backoff, max_backoff);
  bool told = false;
  for (;;) {
    absl::Status s = call();
    if (s.ok() || !IsTransient(s)) return s;
    CRL_RETURN_IF_ERROR(context.Check());
    if (!told && on_waiting) {
      CRL_RETURN_IF_ERROR(on_waiting(what, s));
      told = true;
    }
    clock->SleepFor(std::min(backoff.Next(), context.Remaining()));
  }
}

std::string EvaluationLog(const v1::EvaluateResponse& eval, const std::string& worker) {
  std::string log = absl::StrCat("evaluated on ", worker, eval.lane().empty() ? "" : absl::StrCat(" lane ", eval.lane()),
                                 ": ", v1::Verdict_Name(eval.verdict()), "\n");
  if (!eval.compile().log().empty()) absl::StrAppend(&log, "--- compiler ---\n", eval.compile().log(), "\n");
  if (eval.messages_size() > 0) {
    absl::StrAppend(&log, "--- runner ---\n");
    for (const auto& m : eval.messages()) absl::StrAppend(&log, m, "\n");
  }
  return log;
}

v1::RewardResult RewardOf(const v1::Variant& v, const v1::RunSpec& spec) {
  v1::ComputeRewardRequest rr;
  rr.set_preset(spec.reward_preset() != v1::REWARD_PRESET_UNSPECIFIED ? spec.reward_preset()
                                                                      : v1::REWARD_PRESET_CUDA_L1);
  *rr.mutable_params() = spec.reward_params();
  if (v.parse_error() != v1::PARSE_ERROR_UNSPECIFIED) {
    rr.set_verdict(v1::VERDICT_COMPILE_ERROR);  // no code to run: rewarded as code that does not build
    return reward::ComputeReward(rr);
  }
  rr.set_verdict(v.verdict());
  rr.set_speedup(v.speedup());
  rr.set_speedup_ci_low(v.speedup_ci_low());
  rr.set_speedup_ci_high(v.speedup_ci_high());
  *rr.mutable_flags() = v.flags();
  return reward::ComputeReward(rr);
}

v1::Variant CandidateScorer::Score(v1::Variant v, const v1::Task& task, const v1::RunSpec& spec,
                                   const RequestContext& context, const OnWaiting& on_waiting,
                                   ProgramShare* share) const {
  if (!context.Check().ok()) return v;  // a cancelled run starts no new candidate
  const int attempts = spec.max_infra_attempts() > 0 ? spec.max_infra_attempts() : 3;
  auto infra = [&](const std::string& detail) {
    v.set_infra_failure(true);
    v.set_infra_detail(detail);
    v.set_scored(true);
    return v;
  };
  // Parse: a reject is the model's failure, recorded and never evaluated.
  v1::ParseCompletionRequest pq;
  pq.set_completion(v.completion());
  pq.set_backend(spec.backend());
  pq.set_format(task.format());
  v1::ParseCompletionResponse parsed;
  absl::Status s = RetryTransient("crl-prompt", context, clock_, initial_backoff_, max_backoff_, on_waiting,
                                  [&]() -> absl::Status {
    CRL_ASSIGN_OR_RETURN(parsed, services_.prompt->ParseCompletion(pq, context));
    return absl::OkStatus();
  });
  if (!s.ok()) return context.Check().ok() ? infra(absl::StrCat("parse: ", s.ToString())) : v;
  if (parsed.error() != v1::PARSE_ERROR_UNSPECIFIED) {
    v.set_parse_error(parsed.error());
    v.set_parse_detail(parsed.error_detail());
    *v.mutable_reward() = RewardOf(v, spec);
    v.set_scored(true);
    return v;
  }
  *v.mutable_candidate() = parsed.candidate();
  v.mutable_candidate()->set_backend(spec.backend());
  v.set_analysis(parsed.analysis());
  v.set_design(parsed.design());
  // Another copy of this program in the group: its scoring, once it has one.
  ProgramShare::Lead lead;
  if (share != nullptr) {
    auto joined = share->Join(ProgramShare::KeyOf(task.name(), v.candidate()), context);
    if (!joined.ok()) return v;  // the run ended while the other copy was scored: left unscored
    if (joined->earlier) {
      TakeScoring(*joined->earlier, &v);
      if (services_.metrics) services_.metrics->CountCopyScored();
      *v.mutable_reward() = RewardOf(v, spec);
      v.set_scored(true);
      return v;
    }
    lead = std::move(joined->lead);
  }

  // Evaluate: an infrastructure failure moves to another worker.
  v1::EvaluateRequest eq;
  *eq.mutable_task() = task;
  *eq.mutable_candidate() = v.candidate();
  // A verified candidate's sides wait on its worker for the timing that
  // follows at once (kept_pair below), so they need not start twice.
  eq.set_keep_for_timing_seconds(kKeepForTimingSeconds);
  // A worker that cannot be reached (UNAVAILABLE: down, restarting;
  // RESOURCE_EXHAUSTED: full) is avoided while another can be tried; once
  // every worker has been, the candidate waits, backing off, up to
  // worker_patience_, as it would for any service that is down. Those waits
  // use up no attempt: only an answer (INFRA_ERROR, another error) does.
  std::set<std::string> avoid;
  std::string last_infra;
  std::optional<v1::EvaluateResponse> eval;
  std::string evaluated_on;
  // The worker's slot stays taken while the candidate is timed there.
  WorkerPool::Lease lane;
  UnreachableWait unreachable(clock_, initial_backoff_, max_backoff_, worker_patience_, "every worker", on_waiting);
  for (int a = 0; a < attempts && !eval;) {
    const absl::Time dispatched = clock_->MonotonicNow();
    auto res = services_.workers->Evaluate(eq, avoid, context, &lane);
    if (services_.metrics) services_.metrics->ObserveDispatch(absl::ToDoubleSeconds(clock_->MonotonicNow() - dispatched));
    if (!res.ok()) return v;  // cancelled or past the deadline: left unscored
    if (!res->response.ok()) {
      if (!context.Check().ok()) return v;
      last_infra = absl::StrCat(res->worker, ": ", res->response.status().ToString());
      const auto code = res->response.status().code();
      if (code == absl::StatusCode::kInvalidArgument || code == absl::StatusCode::kNotFound ||
          code == absl::StatusCode::kFailedPrecondition) {
        break;  // the request itself (a task the worker cannot serve): no other worker will do better
      }
      services_.workers->ReportFailure(res->worker);
      const bool unreachable_worker = UnreachableWait::Unreachable(res->response.status());
      if (services_.metrics) {
        services_.metrics->CountWorkerFailure(unreachable_worker ? "unreachable" : "rpc_error");
      }
      avoid.insert(res->worker);
      if (!unreachable_worker) {
        ++a;  // it answered (a deadline that passed, an internal error): an attempt
        continue;
      }
      if (static_cast<int>(avoid.size()) < services_.workers->size()) continue;  // another worker first
      if (!unreachable.Wait(res->response.status(), context, &last_infra)) break;
      avoid.clear();
      continue;
    }
    if (res->response->verdict() == v1::VERDICT_INFRA_ERROR) {
      last_infra = absl::StrCat(res->worker, ": INFRA_ERROR");
      for (const auto& m : res->response->messages()) absl::StrAppend(&last_infra, " ", m);
      services_.workers->ReportFailure(res->worker);
      if (services_.metrics) services_.metrics->CountWorkerFailure("infra_error");
      avoid.insert(res->worker);
      ++a;
      continue;
    }
    eval = *std::move(res->response);
    evaluated_on = res->worker;
  }
  if (!eval) return infra(absl::StrCat("evaluate: ", last_infra));
  v.set_verdict(eval->verdict());
  v.set_log(EvaluationLog(*eval, evaluated_on));
  *v.mutable_flags() = eval->flags();
  *v.mutable_flag_evidence() = eval->flag_evidence();

  // Time what verified, on the timing service (which re-verifies).
  if (eval->verdict() != v1::VERDICT_OK) lane.Release();
  if (eval->verdict() == v1::VERDICT_OK) {
    v1::TimeRequest tq;
    *tq.mutable_task() = task;
    *tq.mutable_candidate() = v.candidate();
    tq.set_artifact_id(eval->artifact_id());
    tq.set_worker(evaluated_on);  // timing measures where the artifact was built
    tq.set_kept_pair(eval->kept_pair());
    tq.set_backend(spec.backend());
    tq.set_budget_seconds(spec.timing_budget_seconds());
    // crl-timing unreachable (or the worker it measures on): waited for as
    // above; an error answer or INFRA_ERROR is an attempt.
    std::optional<v1::TimeResponse> timed;
    UnreachableWait timing_down(clock_, initial_backoff_, max_backoff_, worker_patience_, "crl-timing", on_waiting);
    for (int a = 0; a < attempts && !timed;) {
      absl::StatusOr<v1::TimeResponse> t = services_.timing->Time(tq, context);
      tq.clear_kept_pair();  // taken (or ended) by the first attempt
      if (!context.Check().ok()) return v;
      if (!t.ok()) {
        last_infra = absl::StrCat("timing: ", t.status().ToString());
        if (UnreachableWait::Unreachable(t.status())) {
          if (!timing_down.Wait(t.status(), context, &last_infra)) break;
          continue;
        }
        if (!IsTransient(t.status()) && t.status().code() != absl::StatusCode::kInternal) break;
        clock_->SleepFor(Backoff::Nth(initial_backoff_, max_backoff_, a++));
        continue;
      }
      if (t->verdict() == v1::VERDICT_INFRA_ERROR) {
        last_infra = "timing: INFRA_ERROR";
        ++a;
        continue;
      }
      timed = *std::move(t);
    }
    lane.Release();
    if (!timed) return infra(absl::StrCat("time: ", last_infra));
    v.set_verdict(timed->verdict());
    v.set_speedup(timed->speedup());
    v.set_speedup_ci_low(timed->speedup_ci_low());
    v.set_speedup_ci_high(timed->speedup_ci_high());
    for (int f : timed->flags()) AddFlag(v.mutable_flags(), static_cast<v1::Flag>(f));
    for (const auto& e : timed->flag_evidence()) v.add_flag_evidence(e);
  }
  *v.mutable_reward() = RewardOf(v, spec);
  v.set_scored(true);
  lead.Publish(v);
  return v;
}

}  // namespace crl::orchestrator
