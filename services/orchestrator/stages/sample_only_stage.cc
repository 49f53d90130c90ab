// sample-only: contrastive prompts sampled and scored like contrastive-rl's,
// and nothing sent to a trainer (a baseline of what a policy writes as it
// is).
#include "common/status.h"
#include "services/orchestrator/stages/group_io.h"

namespace crl::orchestrator {
namespace {

class SampleOnlyStage final : public StageInterface {
 public:
  std::string kind() const override { return "sample-only"; }
  bool Trains() const override { return false; }

  absl::StatusOr<v1::StoredGroup> Make(const GroupKey& key, const StageEnv& env) const override {
    CRL_ASSIGN_OR_RETURN(v1::BuildPromptResponse prompt, BuildGroupPrompt(key, env, /*exemplars=*/true));
    return SampleGroup(key, env, prompt);
  }

  absl::Status Submit(const GroupKey&, const v1::StoredGroup&, const std::vector<v1::Variant>&,
                      const StageEnv&) const override {
    return absl::OkStatus();
  }
};

}  // namespace

std::unique_ptr<StageInterface> NewSampleOnlyStage() { return std::make_unique<SampleOnlyStage>(); }

}  // namespace crl::orchestrator
