// One run's rounds: per stage, per round, per task a group, made by the
// stage (stages/stage.h: prompted and sampled, or given examples) → each
// completion scored (scorer.h: parse, evaluate, time, reward) → what the
// stage sends to the trainer → at the end of a training round, the trainer
// flushed and the sampler caught up.
//
// Crash safety: a group's prompt and completions are stored before any is
// scored, and each completion's score is stored as it lands, under keys
// stage/round/task/index; Execute on a run that was interrupted finds them
// and only scores what is not scored yet, and the trainer dedupes groups by
// id. An infrastructure failure (a worker, the timing service) is retried on
// another worker up to spec.max_infra_attempts and then recorded as such —
// never a reward. A service that is down (sampler, prompt, trainer) pauses
// the run until it is back or the run is cancelled.
#ifndef CRL_SERVICES_ORCHESTRATOR_RUN_EXECUTOR_H_
#define CRL_SERVICES_ORCHESTRATOR_RUN_EXECUTOR_H_

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "common/context.h"
#include "services/orchestrator/orchestrator_metrics.h"
#include "services/orchestrator/scorer.h"
#include "services/orchestrator/stages/stage.h"
#include "services/orchestrator/store.h"
#include "services/orchestrator/worker_pool.h"
#include "services/prompt/prompt_client.h"
#include "services/sampler/sampler_client.h"
#include "services/timing/timing_client.h"
#include "services/trainer/trainer_client.h"

namespace crl::orchestrator {

struct ExecutorOptions {
  // Back-off while a service is down.
  absl::Duration initial_backoff = absl::Milliseconds(200);
  absl::Duration max_backoff = absl::Seconds(5);
  // Completions of a group scored at once.
  int parallel_candidates = 8;
  // Groups of a round (one per task) sampled and scored at once.
  int parallel_groups = 4;
  // How long a candidate waits for a worker when every worker it tried is
  // unreachable (CandidateScorer).
  absl::Duration worker_patience = absl::Minutes(2);
  // A training round's groups go to the trainer only once every group of
  // the round is scored (then in task order), so the trainer never trains
  // while the round's candidates are timed: for a cluster whose trainer
  // shares CPUs with the timing (the local cluster on one machine, where
  // a trainer's step beside a host measurement made it NOISY). False: each
  // group goes as soon as it is scored, and training overlaps the round.
  bool train_after_scoring = false;
};

class RunExecutor {
 public:
  // Called after every stored event (the orchestrator wakes watchers).
  using EventSink = std::function<void(const v1::RunEvent&)>;

  RunExecutor(Services services, StoreInterface* store, ClockInterface* clock, ExecutorOptions options,
              EventSink sink)
      : services_(services),
        store_(store),
        clock_(clock),
        options_(options),
        sink_(std::move(sink)),
        scorer_(services, clock, options.initial_backoff, options.max_backoff, options.worker_patience),
        waiting_([this](const std::string& what, const absl::Status& why) {
          return Emit("waiting", absl::StrCat(what, " unavailable, retrying: ", why.message()), nullptr);
        }) {}

  // Runs (or resumes) `run` until it ends: returns the final run
  // (SUCCEEDED, FAILED with the error, or CANCELLED when `context` is
  // cancelled) — except when `stopping` is set as the context is cancelled
  // (the orchestrator shuts down): then the run stays RUNNING, to resume on
  // the next start. Only a store failure is an error status.
  absl::StatusOr<v1::Run> Execute(v1::Run run, const RequestContext& context,
                                  const std::atomic<bool>& stopping);

  // An ended run's held rewards to the judge again, as after each of its
  // rounds (RejudgeHeld). Only a store failure is an error.
  absl::StatusOr<v1::RejudgeRunResponse> Rejudge(v1::Run run, const RequestContext& context);

 private:
  // How a round's groups ended: all done, one failed (the first), or the
  // run's budget ran out.
  struct RoundEnd {
    std::string failed_group;
    absl::Status failure;
    std::string budget_end;
  };
  RoundEnd RunRound(const StageInterface& stage, const std::vector<GroupKey>& keys, const RequestContext& context);
  // A group made (or read back), scored, and, when `submit`, sent to the
  // trainer; a group already scored is only sent.
  absl::Status RunGroup(const StageInterface& stage, const GroupKey& key, bool submit, const RequestContext& context);
  absl::Status RunGroupBody(const StageInterface& stage, const GroupKey& key, bool submit,
                            const RequestContext& context);
  // The end of a training round: the trainer trains on whatever is queued,
  // and the version it publishes becomes the next round's min_policy_step
  // (the sampler waits for it; nothing polls). A version with a new step
  // and its statistics is recorded as a "training" event (the run's
  // curve). Only a store failure is an error.
  absl::Status SyncPolicy(const RequestContext& context);
  // What a stage may use for one group of this run.
  StageEnv Env(const RequestContext& context);
  // Retries `call` while it fails with UNAVAILABLE / DEADLINE_EXCEEDED /
  // RESOURCE_EXHAUSTED (the service is down or busy), recording one event.
  absl::Status Patiently(const std::string& what, const RequestContext& context,
                         const std::function<absl::Status()>& call);
  v1::RunEvent MakeEvent(const std::string& kind, const std::string& message, const v1::Variant* variant);
  absl::Status Emit(const std::string& kind, const std::string& message, const v1::Variant* variant);
  // Stores the event and hands it to the sink.
  absl::Status Append(const v1::RunEvent& event);
  absl::Status SaveRun();
  bool BudgetLeft(std::string* why);
  // A scored candidate whose trusted speedup the spec's judge finds
  // suspicious (SuspicionGate) goes to the judge, whose answer decides its
  // reward (ApplyJudgement); others only raise the task's best.
  void JudgeIfSuspicious(v1::Variant* v, const v1::Task& task, const RequestContext& context);
  // The judge's answer on `v` (`trigger`: why it is suspicious), shown the
  // most similar known hacks; undecided when no judge is configured.
  v1::Judgement AskJudge(const v1::Variant& v, const v1::Task& task, const std::string& trigger,
                         const RequestContext& context);
  // After a round: the run's held rewards go to the judge again, least
  // asked first. A decision replaces the hold (honest: the reward the
  // scorer gives it, RewardOf; cheat: withheld, and a hack case) and is
  // recorded as a "judged" event with the run's counters; the first that
  // stays undecided ends the pass (the judge is likely still down: one wait
  // per round, not one per held reward). The trainer never gets a released
  // reward: its group was sent when its round ended. Only a store failure
  // is an error.
  // `tally` (may be null) counts what was decided and what stays held.
  absl::Status RejudgeHeld(const RequestContext& context, v1::RejudgeRunResponse* tally = nullptr);
  // gate_ for `run`, knowing the trusted rewards among `stored`.
  void StartGate(const v1::Run& run, const std::vector<v1::Variant>& stored);
  // The hack case a scored variant of this run makes, if it is one, into
  // the hack database (lib/hacks/hack_case.h).
  absl::Status RecordHack(const v1::Variant& v);

  Services services_;
  StoreInterface* store_;
  ClockInterface* clock_;
  ExecutorOptions options_;
  EventSink sink_;
  CandidateScorer scorer_;
  OnWaiting waiting_;  // records a "waiting" event
  // The run's id and spec, set once when Execute starts (a spec does not
  // change after submit): group keys and stage calls read them unlocked.
  v1::RunSpec spec_;
  std::string run_id_;
  absl::Mutex mu_;
  v1::Run run_ ABSL_GUARDED_BY(mu_);
  // The trainer's version after this run's last training round (empty
  // before one): what the following rounds must sample from.
  v1::PolicyVersion published_ ABSL_GUARDED_BY(mu_);
  // The last trainer step recorded as a "training" event of this run (-1:
  // none), read back from the store when a run resumes.
  int64_t recorded_step_ ABSL_GUARDED_BY(mu_) = -1;
  // The run's best trusted speedups per task, for the judge (set once when
  // Execute starts).
  std::unique_ptr<SuspicionGate> gate_;
};

// Adds one scored candidate to a run's counters (candidates, rejects,
// infrastructure failures, verified, rewards, held, best trusted speedup,
// faster).
void CountScored(const v1::Variant& variant, v1::Run* run);
// The run's counters again from its stored variants (each scored one once).
void RecountScored(const std::vector<v1::Variant>& stored, v1::Run* run);
// The run's "training" events (its training curve), in order.
absl::StatusOr<std::vector<v1::RunEvent>> TrainingEvents(StoreInterface* store, const std::string& run_id);


}  // namespace crl::orchestrator

#endif  // CRL_SERVICES_ORCHESTRATOR_RUN_EXECUTOR_H_
