// keep-successes (CUDA-L1's stage 2): sample on the plain prompt, keep what
// verified honestly, and train on it as supervised examples. It is blind to
// speed by design (a slow answer that verified is kept like a fast one):
// what it teaches is to write code that verifies, not faster code.
#include <algorithm>

#include "lib/reward/names.h"
#include "common/status.h"
#include "services/orchestrator/stages/group_io.h"

namespace crl::orchestrator {
namespace {

class KeepSuccessesStage final : public StageInterface {
 public:
  std::string kind() const override { return "keep-successes"; }
  bool Trains() const override { return true; }

  absl::StatusOr<v1::StoredGroup> Make(const GroupKey& key, const StageEnv& env) const override {
    CRL_ASSIGN_OR_RETURN(v1::BuildPromptResponse prompt, BuildGroupPrompt(key, env, /*exemplars=*/false));
    return SampleGroup(key, env, prompt);
  }

  absl::Status Submit(const GroupKey&, const v1::StoredGroup& group, const std::vector<v1::Variant>& scored,
                      const StageEnv& env) const override {
    v1::SubmitExamplesRequest req;
    req.set_run_id(env.run_id);
    for (const auto& v : scored) {
      // Verified, sampled, and no flag that says it may cheat (a NOISY
      // timing does not make a correct answer worth less as an example).
      if (v.verdict() != v1::VERDICT_OK || v.infra_failure() || v.token_ids_size() == 0) continue;
      if (std::any_of(v.flags().begin(), v.flags().end(),
                      [](int f) { return IsHonestyFlag(static_cast<v1::Flag>(f)); })) {
        continue;
      }
      v1::Example* e = req.add_examples();
      e->set_prompt(group.prompt());
      e->set_completion(v.completion());
      e->set_example_id(v.variant_id());
      *e->mutable_prompt_token_ids() = group.prompt_token_ids();
      *e->mutable_completion_token_ids() = v.token_ids();
    }
    return SendExamples(req, env);
  }
};

}  // namespace

std::unique_ptr<StageInterface> NewKeepSuccessesStage() { return std::make_unique<KeepSuccessesStage>(); }

}  // namespace crl::orchestrator
