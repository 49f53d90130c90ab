// The trainer as a service sees it: submitted groups and examples queue up,
// one training thread turns them into optimizer steps (groups_per_step
// groups, or examples_per_step examples, or whatever is queued on Flush),
// publishes policy versions to watchers, and checkpoints the weights
// together with the queue and the ids already seen, so a restart loses and
// repeats nothing. gRPC-free: trainer_service.cc is the edge.
//
// Groups sampled more than max_staleness versions before the step that
// would use them are dropped and counted; a group or example id seen before
// is not trained twice.
#ifndef CRL_SERVICES_TRAINER_TRAINING_LOOP_H_
#define CRL_SERVICES_TRAINER_TRAINING_LOOP_H_

#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "common/context.h"
#include "crl/v1/trainer.pb.h"
#include "services/trainer/intake.h"
#include "services/trainer/journal.h"
#include "services/trainer/step_runner.h"
#include "services/trainer/trainer_metrics.h"

namespace crl::trainer {

struct LoopOptions {
  int groups_per_step = 8;
  int examples_per_step = 32;
  // Versions a group may lag the policy it would train; < 0: any.
  int max_staleness = 4;
  // Checkpoint every this many steps (0: only on Checkpoint and drain).
  int checkpoint_every = 50;
  // Publish every this many steps (the sampler's cadence).
  int publish_every = 1;
  // Beyond these, submissions are RESOURCE_EXHAUSTED (the orchestrator
  // retries later).
  int max_queued_groups = 4096;
  int max_queued_examples = 65536;
  // Ids remembered for de-duplication (the oldest are forgotten first).
  int remembered_ids = 200000;
  // Continue from out_dir's latest checkpoint when there is one.
  bool resume = true;
  // Where accepted submissions are journaled before they are acknowledged
  // (journal.h); empty: no journal (a crash loses what was queued since the
  // last checkpoint).
  std::string journal_dir;
};

// Thread-safe.
class TrainingLoop {
 public:
  // `runner`, `intake`, `clock` and `metrics` (may be null) must outlive it.
  TrainingLoop(StepRunner* runner, const Intake* intake, LoopOptions options,
               TrainerMetrics* metrics, ClockInterface* clock);
  ~TrainingLoop();

  // Resumes from the latest checkpoint (weights, queue, seen ids) if asked,
  // makes the current version loadable, and starts the training thread.
  absl::Status Start();

  absl::StatusOr<v1::SubmitGroupResponse> SubmitGroup(const v1::SubmitGroupRequest& request,
                                                      const RequestContext& context);
  absl::StatusOr<v1::SubmitExamplesResponse> SubmitExamples(const v1::SubmitExamplesRequest& request,
                                                            const RequestContext& context);
  v1::PolicyVersion Current() const;
  absl::StatusOr<v1::CheckpointResponse> Checkpoint(const RequestContext& context);
  absl::StatusOr<v1::FlushResponse> Flush(const RequestContext& context);
  // Trains what is queued, then applies the phase change (step_runner.h's
  // PhaseChange); a restored snapshot is published as a new version. A
  // phase_id that is current already changes nothing. INVALID_ARGUMENT for
  // a bad schedule or snapshot name; the version current after it otherwise.
  absl::StatusOr<v1::PolicyVersion> BeginPhase(const v1::BeginPhaseRequest& request, const RequestContext& context);

  // `on_version` runs (on the training thread, briefly, never concurrently
  // with itself) for every version published after this call. Returns an id
  // for Unwatch; after Unwatch returns it is never called again.
  // `on_close` runs once when the loop drains.
  int Watch(std::function<void(const v1::PolicyVersion&)> on_version,
            std::function<void()> on_close);
  void Unwatch(int id);

  // Stops taking submissions, lets the current step finish, checkpoints,
  // stops the other ranks and the thread. Idempotent.
  void Drain();

 private:
  struct QueuedGroup {
    std::string id;
    int64_t version = 0;
    std::vector<TrainSequence> sequences;
  };
  // The result of a step for the submissions waiting on it.
  struct Outcome {
    v1::GroupOutcome outcome = v1::GROUP_OUTCOME_UNSPECIFIED;
    int64_t version = 0;
    double loss = 0;
    absl::Status status;
  };
  enum class Work { kNone, kSupervised, kPolicyGradient, kCheckpoint, kPhase, kStop };

  void Run();
  Work NextWork(std::vector<TrainSequence>* batch, std::vector<std::string>* ids)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void AfterStep(const absl::StatusOr<StepStats>& stats, Work work,
                 const std::vector<std::string>& ids);
  absl::Status PublishNow(const StepStats* stats);
  // Applies the first queued phase change (the training thread).
  void ApplyPhase();
  absl::Status CheckpointNow();
  nlohmann::json QueueState() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RestoreQueue(const nlohmann::json& state) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Queues what the journal holds beyond the checkpoint; returns how many
  // submissions it queued again.
  int ReplayJournal() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool Seen(const std::string& id) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Remember(const std::string& id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Waits until `id` has an outcome, or the context ends.
  absl::StatusOr<Outcome> AwaitOutcome(const std::string& id, const RequestContext& context);
  void UpdateGauges() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  StepRunner* runner_;
  const Intake* intake_;
  const LoopOptions options_;
  TrainerMetrics* metrics_;
  ClockInterface* clock_;

  mutable absl::Mutex mu_;
  std::deque<QueuedGroup> groups_ ABSL_GUARDED_BY(mu_);
  std::deque<TrainSequence> examples_ ABSL_GUARDED_BY(mu_);
  std::deque<std::string> seen_order_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> seen_ ABSL_GUARDED_BY(mu_);
  // Ids whose submitter waits for the step that uses them.
  std::map<std::string, Outcome> waiting_ ABSL_GUARDED_BY(mu_);
  int flushes_requested_ ABSL_GUARDED_BY(mu_) = 0;
  int flushes_done_ ABSL_GUARDED_BY(mu_) = 0;
  v1::FlushResponse last_flush_ ABSL_GUARDED_BY(mu_);
  // Phase changes waiting for the training thread, in order; each is
  // applied once what was queued before it has trained.
  std::deque<PhaseChange> phase_requests_ ABSL_GUARDED_BY(mu_);
  int phases_requested_ ABSL_GUARDED_BY(mu_) = 0;
  int phases_done_ ABSL_GUARDED_BY(mu_) = 0;
  // Each phase request's outcome by its ticket (the phases_done_ it made);
  // the latest few only.
  std::map<int, absl::Status> phase_results_ ABSL_GUARDED_BY(mu_);
  // The current phase's id (the trainer's, mirrored for the submitting threads).
  std::string phase_id_ ABSL_GUARDED_BY(mu_);
  int checkpoints_requested_ ABSL_GUARDED_BY(mu_) = 0;
  int checkpoints_done_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status last_checkpoint_ ABSL_GUARDED_BY(mu_);
  std::string last_checkpoint_uri_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Submissions since the last checkpoint (the drain checkpoints them).
  bool queue_changed_ ABSL_GUARDED_BY(mu_) = false;
  // The trainer's step, mirrored for the submitting threads.
  int64_t step_ ABSL_GUARDED_BY(mu_) = 0;
  v1::PolicyVersion current_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<Journal> journal_ ABSL_GUARDED_BY(mu_);
  // Held while watchers run (not mu_: a watcher may call Current()).
  absl::Mutex watch_mu_;
  struct Watcher {
    std::function<void(const v1::PolicyVersion&)> on_version;
    std::function<void()> on_close;
  };
  std::map<int, Watcher> watchers_ ABSL_GUARDED_BY(watch_mu_);
  int next_watcher_ ABSL_GUARDED_BY(watch_mu_) = 0;
  int64_t steps_since_checkpoint_ = 0;  // training thread only
  int64_t steps_since_publish_ = 0;     // training thread only
  std::thread thread_;
  std::once_flag drain_once_;
};

}  // namespace crl::trainer

#endif  // CRL_SERVICES_TRAINER_TRAINING_LOOP_H_
