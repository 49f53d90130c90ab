// Policy-gradient stages: each group is G completions of one prompt, scored,
// and sent to the trainer with its rewards as a GRPO group (the trainer turns
// rewards into group-relative advantages).
//
//   grpo            the plain prompt (the task and its reference, no earlier
//                   variants): GRPO as DeepSeek-Math describes it.
//   contrastive-rl  the contrastive prompt (CUDA-L1): the task's earlier
//                   variants of this run with their measured speedups, chosen
//                   by the spec's exemplar selection; the model analyses why
//                   the fast ones are fast, then writes its own.
#include <utility>

#include "common/status.h"
#include "services/orchestrator/stages/group_io.h"

namespace crl::orchestrator {
namespace {

class GrpoStage final : public StageInterface {
 public:
  GrpoStage(std::string kind, bool exemplars) : kind_(std::move(kind)), exemplars_(exemplars) {}
  std::string kind() const override { return kind_; }
  bool Trains() const override { return true; }

  absl::StatusOr<v1::StoredGroup> Make(const GroupKey& key, const StageEnv& env) const override {
    CRL_ASSIGN_OR_RETURN(v1::BuildPromptResponse prompt, BuildGroupPrompt(key, env, exemplars_));
    return SampleGroup(key, env, prompt);
  }

  absl::Status Submit(const GroupKey& key, const v1::StoredGroup& group, const std::vector<v1::Variant>& scored,
                      const StageEnv& env) const override {
    return SendGroup(GrpoGroup(key, group, scored, env), env);
  }

 private:
  std::string kind_;
  bool exemplars_;
};

}  // namespace

std::unique_ptr<StageInterface> NewGrpoStage() { return std::make_unique<GrpoStage>("grpo", false); }
std::unique_ptr<StageInterface> NewContrastiveRlStage() {
  return std::make_unique<GrpoStage>("contrastive-rl", true);
}

}  // namespace crl::orchestrator
