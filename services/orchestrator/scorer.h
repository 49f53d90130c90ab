// One candidate from completion to reward, as a run scores it and as
// ScoreCompletions does outside any run: parse on crl-prompt (a reject is
// the model's failure, never evaluated) → evaluate on the least-loaded
// healthy worker (an infrastructure failure moves to another, up to
// spec.max_infra_attempts, then is recorded as such — never a reward) →
// time what verified on crl-timing (which re-verifies) → the reward of the
// spec's preset (a flag withholds it).
#ifndef CRL_SERVICES_ORCHESTRATOR_SCORER_H_
#define CRL_SERVICES_ORCHESTRATOR_SCORER_H_

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/context.h"
#include "crl/v1/orchestrator.pb.h"
#include "services/orchestrator/judge.h"
#include "services/orchestrator/orchestrator_metrics.h"
#include "services/orchestrator/program_share.h"
#include "services/orchestrator/worker_pool.h"
#include "services/prompt/prompt_client.h"
#include "services/sampler/sampler_client.h"
#include "services/timing/timing_client.h"
#include "services/trainer/trainer_client.h"

namespace crl::orchestrator {

struct Services {
  PromptClientInterface* prompt = nullptr;
  SamplerClientInterface* sampler = nullptr;
  WorkerPool* workers = nullptr;
  TimingClientInterface* timing = nullptr;
  // Null: no trainer (sample-only runs still work; training stages fail).
  TrainerClientInterface* trainer = nullptr;
  // Null: no metrics.
  OrchestratorMetrics* metrics = nullptr;
  // Null: no judge (a spec that asks for one is refused at submit).
  JudgeInterface* judge = nullptr;
};

// Told once per wait that `what` is down and why (a run records a
// "waiting" event); an error from it ends the wait. May be empty.
using OnWaiting = std::function<absl::Status(const std::string& what, const absl::Status& why)>;

// Whether a gRPC-style status means "the service is down or busy; try again".
bool IsTransient(const absl::Status& status);

// Retries `call` while it fails with UNAVAILABLE / DEADLINE_EXCEEDED /
// RESOURCE_EXHAUSTED, with exponential back-off, until it succeeds, fails
// otherwise, or `context` ends.
absl::Status RetryTransient(const std::string& what, const RequestContext& context, ClockInterface* clock,
                            absl::Duration initial_backoff, absl::Duration max_backoff,
                            const OnWaiting& on_waiting, const std::function<absl::Status()>& call);

// Runs `work` (which takes items until none is left) on min(parallelism,
// items) threads, this one included, and waits for them.
void OnThreads(int parallelism, size_t items, const std::function<void()>& work);

// The variant's log of one evaluation: where it ran, the verdict, the
// compiler's output and the runner's messages.
std::string EvaluationLog(const v1::EvaluateResponse& eval, const std::string& worker);

// The reward of a scored variant under `spec`'s preset and parameters,
// from its verdict (a parse reject counts as code that does not build),
// speedup, interval and flags: what Score gives it, and what a held reward
// the judge later clears is paid.
v1::RewardResult RewardOf(const v1::Variant& variant, const v1::RunSpec& spec);

// Seconds a verified candidate's sides are kept on its worker for its
// timing (EvaluateRequest.keep_for_timing_seconds).
inline constexpr double kKeepForTimingSeconds = 10;

class CandidateScorer {
 public:
  // `initial_backoff`/`max_backoff` pace the retries while a service is
  // down. `worker_patience`: how long a candidate waits, backing off, when
  // every worker it tried is unreachable (a crashed worker restarting)
  // before it is recorded as an infrastructure failure; a worker that
  // answers INFRA_ERROR costs one of the spec's max_infra_attempts instead.
  CandidateScorer(Services services, ClockInterface* clock, absl::Duration initial_backoff,
                  absl::Duration max_backoff, absl::Duration worker_patience)
      : services_(services),
        clock_(clock),
        initial_backoff_(initial_backoff),
        max_backoff_(max_backoff),
        worker_patience_(worker_patience) {}

  // Scores `variant` (its completion) for `task` under `spec`'s backend,
  // reward preset, timing budget and infra attempts. The result has
  // scored() set, except when `context` ended first (left unscored).
  // `share` (may be null): the group's (or the request's), so that copies
  // of one program are evaluated and timed once (program_share.h).
  v1::Variant Score(v1::Variant variant, const v1::Task& task, const v1::RunSpec& spec,
                    const RequestContext& context, const OnWaiting& on_waiting, ProgramShare* share) const;

 private:
  Services services_;
  ClockInterface* clock_;
  absl::Duration initial_backoff_;
  absl::Duration max_backoff_;
  absl::Duration worker_patience_;
};

}  // namespace crl::orchestrator

#endif  // CRL_SERVICES_ORCHESTRATOR_SCORER_H_
