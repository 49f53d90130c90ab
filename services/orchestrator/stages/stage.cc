// What every stage shares by default, and the stages a spec may name (the
// registry: one line each).
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "lib/run/run_spec.h"
#include "services/orchestrator/stages/stage.h"

namespace crl::orchestrator {

// Defined in <kind>_stage.cc.
std::unique_ptr<StageInterface> NewSftStage();
std::unique_ptr<StageInterface> NewKeepSuccessesStage();
std::unique_ptr<StageInterface> NewGrpoStage();
std::unique_ptr<StageInterface> NewContrastiveRlStage();
std::unique_ptr<StageInterface> NewSampleOnlyStage();

namespace {

using Factory = std::unique_ptr<StageInterface> (*)();
constexpr std::pair<const char*, Factory> kStages[] = {
    {"sft", NewSftStage},
    {"keep-successes", NewKeepSuccessesStage},
    {"grpo", NewGrpoStage},
    {"contrastive-rl", NewContrastiveRlStage},
    {"sample-only", NewSampleOnlyStage},
};

}  // namespace

absl::Status StageInterface::Validate(const v1::RunSpec&, int) const { return absl::OkStatus(); }

std::optional<GroupKey> StageInterface::Plan(const v1::RunSpec&, const v1::Task& task, int stage_index,
                                             int round) const {
  GroupKey key;
  key.stage_index = stage_index;
  key.stage = kind();
  key.round = round;
  key.task = &task;
  key.id = absl::StrCat("s", stage_index, "/r", round, "/", task.name());
  key.scored_group = key.id;
  return key;
}

std::vector<std::string> StageKinds() {
  std::vector<std::string> kinds;
  for (const auto& [kind, factory] : kStages) kinds.push_back(kind);
  return kinds;
}

absl::StatusOr<std::unique_ptr<StageInterface>> MakeStage(const std::string& kind) {
  for (const auto& [name, factory] : kStages) {
    if (kind == name) return factory();
  }
  return absl::InvalidArgumentError(absl::StrCat("'", kind, "' is not ", absl::StrJoin(StageKinds(), ", ")));
}

absl::Status ValidateStages(const v1::RunSpec& spec) {
  const std::vector<v1::Stage> stages = run::EffectiveStages(spec);
  for (size_t i = 0; i < stages.size(); ++i) {
    auto stage = MakeStage(stages[i].kind());
    if (!stage.ok()) return absl::InvalidArgumentError(absl::StrCat("stages[", i, "].kind: ", stage.status().message()));
    if (absl::Status valid = (*stage)->Validate(spec, static_cast<int>(i)); !valid.ok()) return valid;
  }
  return absl::OkStatus();
}

}  // namespace crl::orchestrator
