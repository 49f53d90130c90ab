// A run's stages, one implementation per kind (sft, keep-successes, grpo,
// contrastive-rl, sample-only). The executor (run_executor.h) is a loop
// over them that owns what every stage shares: rounds, parallel groups,
// scoring, budgets, crash safety, the trainer's flush. A stage says only
//
//   Plan     which tasks have a group in a round, and which stored group
//            is scored and trained on (an sft stage's epochs reuse round 0);
//   Make     how a group is prompted and filled (sampled, or given
//            examples), stored before anything is scored;
//   Submit   what of the scored group goes to the trainer.
//
// Adding a stage: one new file beside the others, and a line in
// stage.cc. Validation of a spec's stages goes through the
// registry (ValidateStages), so the orchestrator refuses an unknown kind
// with the field's name.
#ifndef CRL_SERVICES_ORCHESTRATOR_STAGES_STAGE_H_
#define CRL_SERVICES_ORCHESTRATOR_STAGES_STAGE_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/context.h"
#include "crl/v1/orchestrator.pb.h"
#include "services/orchestrator/store.h"
#include "services/prompt/prompt_client.h"
#include "services/sampler/sampler_client.h"
#include "services/trainer/trainer_client.h"

namespace crl::orchestrator {

// One group of a run: a task in one round of one stage.
struct GroupKey {
  int stage_index = 0;
  std::string stage;  // the stage's kind, stored on each variant
  int round = 0;
  const v1::Task* task = nullptr;
  // "s<stage index>/r<round>/<task>": the store's key of the group and the
  // prefix of its variants' keys.
  std::string id;
  // The group whose variants are scored and trained on: `id`, except where
  // the stage reuses an earlier round's (an sft stage's epochs).
  std::string scored_group;
};

// What a stage may use while it makes and submits one group. Built by the
// executor per group; the calls are bound to the run's context.
struct StageEnv {
  std::string run_id;
  // The run's: its cancellation reaches every call a stage makes.
  const RequestContext* context = nullptr;
  const v1::RunSpec* spec = nullptr;
  StoreInterface* store = nullptr;
  PromptClientInterface* prompt = nullptr;
  SamplerClientInterface* sampler = nullptr;
  // Null where the run trains nothing (Submit is then never called).
  TrainerClientInterface* trainer = nullptr;
  // Retries `call` while `what` is down or busy (a "waiting" event once),
  // until it succeeds, fails otherwise, or the run's context ends.
  std::function<absl::Status(const std::string& what, const std::function<absl::Status()>& call)> patiently;
  // The trainer's version after the run's last training round (0 / empty
  // before one): samples are asked to come from it (min_policy_step).
  int64_t min_policy_step = 0;
  std::string published_version;
  // Records an event of the run ("error", message).
  std::function<absl::Status(const std::string& kind, const std::string& message)> emit;
};

class StageInterface {
 public:
  virtual ~StageInterface() = default;

  // The kind a spec names it by.
  virtual std::string kind() const = 0;
  // Whether its groups go to a trainer (a run with `training: none` sends
  // nothing, whatever this says: its untrained twin).
  virtual bool Trains() const = 0;
  // Whether a round must end with the sampler serving what the trainer made
  // of it (the next round samples from it). A stage that samples nothing
  // (sft) syncs once, after its last round.
  virtual bool SyncsEachRound() const { return true; }
  // Whether a round's groups run one at a time, in task order, so that what
  // they send the trainer reaches it in an order fixed by the spec (sft: its
  // steps are cut from examples in arrival order, and groups run at once
  // arrived in whichever order they finished, a different mix of examples in
  // every run).
  virtual bool OneGroupAtATime() const { return false; }
  // OK, or why stages[index] of `spec` cannot run (INVALID_ARGUMENT naming
  // the field).
  virtual absl::Status Validate(const v1::RunSpec& spec, int index) const;
  // The group of `task` in `round`, or nothing when the task has none in
  // this stage. The default: one group per task per round, scored itself.
  virtual std::optional<GroupKey> Plan(const v1::RunSpec& spec, const v1::Task& task, int stage_index,
                                       int round) const;
  // Makes the group (prompt, completions as unscored variants), storing the
  // variants first and the group last, so a crash before the group is
  // written makes it again. Called only when the group is not stored yet.
  virtual absl::StatusOr<v1::StoredGroup> Make(const GroupKey& key, const StageEnv& env) const = 0;
  // Sends the scored group (`scored`: the variants of key.scored_group) to
  // the trainer. An error the trainer answers for the group itself is
  // recorded by the executor, and the run goes on.
  virtual absl::Status Submit(const GroupKey& key, const v1::StoredGroup& group,
                              const std::vector<v1::Variant>& scored, const StageEnv& env) const = 0;
};

// The stage of `kind`; INVALID_ARGUMENT listing the known kinds otherwise.
absl::StatusOr<std::unique_ptr<StageInterface>> MakeStage(const std::string& kind);
// The known kinds, in the registry's order.
std::vector<std::string> StageKinds();
// Every stage of `spec` (run::EffectiveStages) is known and valid there;
// INVALID_ARGUMENT names the field ("stages[1].kind: ...").
absl::Status ValidateStages(const v1::RunSpec& spec);

}  // namespace crl::orchestrator

#endif  // CRL_SERVICES_ORCHESTRATOR_STAGES_STAGE_H_
