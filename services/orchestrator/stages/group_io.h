// What several stages do the same way, written once: a group's prompt, its
// sampled completions as variants, and the two shapes a trainer takes (a
// GRPO group; supervised examples).
#ifndef CRL_SERVICES_ORCHESTRATOR_STAGES_GROUP_IO_H_
#define CRL_SERVICES_ORCHESTRATOR_STAGES_GROUP_IO_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "crl/v1/orchestrator.pb.h"
#include "crl/v1/trainer.pb.h"
#include "services/orchestrator/stages/stage.h"

namespace crl::orchestrator {

// crl-prompt's most exemplars a prompt is chosen from.
inline constexpr int kMaxExemplarPool = 64;

// Whether a scored variant may be shown as an exemplar (it parsed, ran, and
// has a verdict that is not an infrastructure failure).
bool UsableExemplar(const v1::Variant& variant);

// `variant` as a prompt shows it: its speedup and flags as the reward saw
// them. A timing flagged only NOISY is paid at its interval's end nearest 1
// (lib/reward), so that is the speedup shown, without the flag; the same
// line as a trusted speedup. A flag that says the candidate may cheat stays
// (the prompt withholds its speedup), and so does NOISY where the interval
// is unknown (its reward was withheld too).
v1::Exemplar ExemplarOf(const v1::Variant& variant);

// The group's prompt from crl-prompt, seeded by the group's key. With
// `exemplars`, the task's usable variants of this run so far are the pool
// the spec's selection draws from; without, the prompt has none (the form
// an sft stage trains on).
absl::StatusOr<v1::BuildPromptResponse> BuildGroupPrompt(const GroupKey& key, const StageEnv& env, bool exemplars);

// An unscored variant of the group at `index` (key, id, task, stage, round).
v1::Variant NewVariant(const GroupKey& key, const StageEnv& env, int index);
// The group's record before its completions are known (prompt, exemplars).
v1::StoredGroup NewGroup(const GroupKey& key, const v1::BuildPromptResponse& prompt);

// Samples spec.group_size completions of `prompt` (the spec's temperature,
// token cap and a seed from the group's key), stores each as a variant with
// its token ids and log-probabilities, then the group.
absl::StatusOr<v1::StoredGroup> SampleGroup(const GroupKey& key, const StageEnv& env,
                                            const v1::BuildPromptResponse& prompt);

// The scored group as a GRPO group: every completion with token ids and no
// infrastructure failure, with its reward (the trainer skips rewards that
// are not OK). Idempotent by the group's id. Under the spec's
// `control: permuted-rewards`, the rewards are dealt to the completions in
// a random order drawn from the group's key.
v1::SubmitGroupRequest GrpoGroup(const GroupKey& key, const v1::StoredGroup& group,
                                 const std::vector<v1::Variant>& scored, const StageEnv& env);

// Sends `request` when it holds examples (nothing otherwise).
absl::Status SendExamples(const v1::SubmitExamplesRequest& request, const StageEnv& env);
absl::Status SendGroup(const v1::SubmitGroupRequest& request, const StageEnv& env);

}  // namespace crl::orchestrator

#endif  // CRL_SERVICES_ORCHESTRATOR_STAGES_GROUP_IO_H_
