// sft: the spec's examples (sft_examples), verified and timed once in round
// 0 like any candidate, then trained on as supervised examples every round
// (rounds are epochs), under the plain prompt of their task. What verified
// is trained on, flags or not: the examples are the spec author's, and a
// flag on their timing (a loaded machine's host timer) says nothing of what
// they teach; a flag withholds only their reward.
//
// When the spec asks for exemplars (exemplars.count > 0), every odd epoch
// uses the contrastive prompt instead: the task's verified examples shown
// as earlier variants with their measured speedups (the pool the spec's
// selection draws from). Every verified example is trained under that same
// prompt, the slow as the fast, so what SFT teaches does not depend on the
// scores shown: reading them is left to RL.
#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "lib/run/run_spec.h"
#include "services/orchestrator/stages/group_io.h"

namespace crl::orchestrator {
namespace {

class SftStage final : public StageInterface {
 public:
  std::string kind() const override { return "sft"; }
  bool Trains() const override { return true; }
  bool SyncsEachRound() const override { return false; }
  bool OneGroupAtATime() const override { return true; }

  absl::Status Validate(const v1::RunSpec& spec, int index) const override {
    if (spec.sft_examples_size() > 0) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(
        "stages[", index, "].kind: 'sft' needs sft_examples (shipped, or a JSON-lines file of {task, source, analysis})"));
  }

  std::optional<GroupKey> Plan(const v1::RunSpec& spec, const v1::Task& task, int stage_index,
                               int round) const override {
    bool has = false;
    for (const auto& e : spec.sft_examples()) has = has || e.task_name() == task.name();
    if (!has) return std::nullopt;
    std::optional<GroupKey> key = StageInterface::Plan(spec, task, stage_index, round);
    // The examples are scored once, in round 0; later epochs reuse those scores.
    key->scored_group = absl::StrCat("s", stage_index, "/r0/", task.name());
    return key;
  }

  absl::StatusOr<v1::StoredGroup> Make(const GroupKey& key, const StageEnv& env) const override {
    if (key.round > 0) {
      CRL_ASSIGN_OR_RETURN(auto first, env.store->GetGroup(env.run_id, key.scored_group));
      if (!first) return absl::InternalError(absl::StrCat(key.id, ": epoch 0 group ", key.scored_group, " is missing"));
      v1::StoredGroup g = *first;
      g.set_group_id(key.id);
      g.set_round(key.round);
      g.set_submitted(false);
      if (key.round % 2 == 1 && env.spec->selection().num_exemplars() > 0) {
        // The pool: this run's variants of the task, i.e. the examples as
        // round 0 scored them.
        CRL_ASSIGN_OR_RETURN(v1::BuildPromptResponse prompt, BuildGroupPrompt(key, env, /*exemplars=*/true));
        g.set_prompt(prompt.prompt());
        *g.mutable_messages() = prompt.messages();
        *g.mutable_exemplar_ids() = prompt.exemplar_ids();
      }
      CRL_RETURN_IF_ERROR(env.store->PutGroup(env.run_id, g));
      return g;
    }
    CRL_ASSIGN_OR_RETURN(v1::BuildPromptResponse prompt, BuildGroupPrompt(key, env, /*exemplars=*/false));
    int index = 0;
    for (const v1::SftExample& e : env.spec->sft_examples()) {
      if (e.task_name() != key.task->name()) continue;
      v1::Variant v = NewVariant(key, env, index++);
      v.set_completion(run::SftAnswer(e, *key.task, env.spec->backend()));  // no policy version: given, not sampled
      CRL_RETURN_IF_ERROR(env.store->PutVariant(env.run_id, v));
    }
    v1::StoredGroup g = NewGroup(key, prompt);
    *g.mutable_messages() = prompt.messages();
    CRL_RETURN_IF_ERROR(env.store->PutGroup(env.run_id, g));
    return g;
  }

  absl::Status Submit(const GroupKey& key, const v1::StoredGroup& group, const std::vector<v1::Variant>& scored,
                      const StageEnv& env) const override {
    v1::SubmitExamplesRequest req;
    req.set_run_id(env.run_id);
    for (const auto& v : scored) {
      if (v.verdict() != v1::VERDICT_OK || v.infra_failure()) continue;
      // Not sampled: the trainer renders the messages and tokenizes the
      // answer; each epoch is a new example.
      v1::Example* e = req.add_examples();
      e->set_prompt(group.prompt());
      e->set_completion(v.completion());
      *e->mutable_messages() = group.messages();
      e->set_example_id(absl::StrCat(v.variant_id(), "/epoch", key.round));
    }
    return SendExamples(req, env);
  }
};

}  // namespace

std::unique_ptr<StageInterface> NewSftStage() { return std::make_unique<SftStage>(); }

}  // namespace crl::orchestrator
