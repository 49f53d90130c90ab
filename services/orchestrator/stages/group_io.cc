#include "services/orchestrator/stages/group_io.h"

#include <random>

#include "absl/strings/str_cat.h"
#include "common/hash.h"
#include "common/status.h"
#include "lib/reward/names.h"
#include "lib/reward/rewards.h"

namespace crl::orchestrator {

bool UsableExemplar(const v1::Variant& v) {
  return v.scored() && !v.infra_failure() && v.parse_error() == v1::PARSE_ERROR_UNSPECIFIED &&
         v.verdict() != v1::VERDICT_UNSPECIFIED && v.verdict() != v1::VERDICT_INFRA_ERROR;
}

v1::Exemplar ExemplarOf(const v1::Variant& v) {
  v1::Exemplar e;
  e.set_variant_id(v.key());
  e.set_source(v.candidate().source());
  e.set_verdict(v.verdict());
  e.set_speedup(v.speedup());
  *e.mutable_flags() = v.flags();
  e.set_analysis(v.analysis());
  e.set_policy_version(v.policy_version());
  bool noisy = false, honesty = false;
  for (int f : v.flags()) {
    noisy = noisy || f == v1::FLAG_NOISY;
    honesty = honesty || IsHonestyFlag(static_cast<v1::Flag>(f));
  }
  if (noisy && !honesty && v.verdict() == v1::VERDICT_OK) {
    reward::RewardInput in;
    in.speedup = v.speedup();
    in.ci_low = v.speedup_ci_low();
    in.ci_high = v.speedup_ci_high();
    if (const double paid = reward::ConservativeSpeedup(in); paid > 0) {
      e.set_speedup(paid);
      e.clear_flags();
      for (int f : v.flags()) {
        if (f != v1::FLAG_NOISY) e.add_flags(static_cast<v1::Flag>(f));
      }
    }
  }
  return e;
}

namespace {

absl::Status AddExemplarPool(const GroupKey& key, const StageEnv& env, v1::BuildPromptRequest* request) {
  CRL_ASSIGN_OR_RETURN(std::vector<v1::Variant> seen, env.store->Variants(env.run_id, key.task->name()));
  std::vector<const v1::Variant*> usable;
  for (const auto& v : seen) {
    if (UsableExemplar(v)) usable.push_back(&v);
  }
  // The most recent ones when there are more than a prompt may carry.
  const size_t from = usable.size() > kMaxExemplarPool ? usable.size() - kMaxExemplarPool : 0;
  for (size_t i = from; i < usable.size(); ++i) {
    *request->add_pool() = ExemplarOf(*usable[i]);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<v1::BuildPromptResponse> BuildGroupPrompt(const GroupKey& key, const StageEnv& env, bool exemplars) {
  const v1::RunSpec& spec = *env.spec;
  v1::BuildPromptRequest request;
  *request.mutable_task() = *key.task;
  request.set_backend(spec.backend());
  request.set_seed(spec.seed() ^ StableHash64("prompt/" + key.id));
  request.set_template_name(spec.template_name());
  request.set_num_exemplars(spec.num_exemplars());
  *request.mutable_selection() = spec.selection();
  if (exemplars) {
    CRL_RETURN_IF_ERROR(AddExemplarPool(key, env, &request));
  } else {
    request.mutable_selection()->set_strategy(v1::EXEMPLAR_STRATEGY_NONE);
  }
  v1::BuildPromptResponse prompt;
  CRL_RETURN_IF_ERROR(env.patiently("crl-prompt", [&]() -> absl::Status {
    CRL_ASSIGN_OR_RETURN(prompt, env.prompt->BuildPrompt(request, *env.context));
    return absl::OkStatus();
  }));
  return prompt;
}

v1::Variant NewVariant(const GroupKey& key, const StageEnv& env, int index) {
  v1::Variant v;
  v.set_key(absl::StrCat(key.id, "/", index));
  v.set_variant_id(absl::StrCat(env.run_id, "/", v.key()));
  v.set_task_name(key.task->name());
  v.set_round(key.round);
  v.set_stage(key.stage);
  v.set_index(index);
  return v;
}

v1::StoredGroup NewGroup(const GroupKey& key, const v1::BuildPromptResponse& prompt) {
  v1::StoredGroup g;
  g.set_group_id(key.id);
  g.set_task_name(key.task->name());
  g.set_stage(key.stage);
  g.set_round(key.round);
  g.set_prompt(prompt.prompt());
  *g.mutable_exemplar_ids() = prompt.exemplar_ids();
  return g;
}

absl::StatusOr<v1::StoredGroup> SampleGroup(const GroupKey& key, const StageEnv& env,
                                            const v1::BuildPromptResponse& prompt) {
  const v1::RunSpec& spec = *env.spec;
  v1::SampleRequest request;
  *request.mutable_messages() = prompt.messages();
  if (prompt.messages_size() == 0) request.set_prompt(prompt.prompt());
  request.set_num_completions(spec.group_size() > 0 ? spec.group_size() : 4);
  request.set_policy(spec.policy());
  request.set_request_id(absl::StrCat(env.run_id, "/", key.id));
  request.set_min_policy_step(env.min_policy_step);
  v1::SamplingParams* p = request.mutable_params();
  p->set_temperature(spec.temperature() > 0 ? spec.temperature() : 1.0);
  p->set_max_tokens(spec.max_tokens() > 0 ? spec.max_tokens() : 512);
  p->set_seed(spec.seed() ^ StableHash64("sample/" + key.id));
  p->set_has_seed(true);
  v1::SampleResponse sampled;
  CRL_RETURN_IF_ERROR(env.patiently("crl-sampler", [&]() -> absl::Status {
    CRL_ASSIGN_OR_RETURN(sampled, env.sampler->Sample(request, *env.context));
    return absl::OkStatus();
  }));
  if (!env.published_version.empty() && sampled.policy_version() != env.published_version) {
    CRL_RETURN_IF_ERROR(env.emit(
        "waiting", absl::StrCat(key.id, ": sampled from policy version '", sampled.policy_version(),
                                "', the trainer published '", env.published_version,
                                "' (the sampler did not take it up within its --policy_wait_seconds)")));
  }
  for (int i = 0; i < sampled.completions_size(); ++i) {
    const v1::Completion& c = sampled.completions(i);
    v1::Variant v = NewVariant(key, env, i);
    v.set_completion(c.text());
    *v.mutable_token_ids() = c.token_ids();
    *v.mutable_logprobs() = c.token_logprobs();
    v.set_policy_version(c.policy_version().empty() ? sampled.policy_version() : c.policy_version());
    CRL_RETURN_IF_ERROR(env.store->PutVariant(env.run_id, v));
  }
  v1::StoredGroup g = NewGroup(key, prompt);
  *g.mutable_prompt_token_ids() = sampled.prompt_token_ids();
  g.set_policy_version(sampled.policy_version());
  // The group is written last: a crash before this line samples it again.
  CRL_RETURN_IF_ERROR(env.store->PutGroup(env.run_id, g));
  return g;
}

v1::SubmitGroupRequest GrpoGroup(const GroupKey& key, const v1::StoredGroup& group,
                                 const std::vector<v1::Variant>& scored, const StageEnv& env) {
  v1::SubmitGroupRequest req;
  req.set_run_id(env.run_id);
  req.set_group_id(absl::StrCat(env.run_id, "/", key.id));
  req.set_prompt(group.prompt());
  *req.mutable_prompt_token_ids() = group.prompt_token_ids();
  req.set_policy_version(group.policy_version());
  for (const auto& v : scored) {
    if (v.infra_failure() || v.token_ids_size() == 0) continue;
    v1::ScoredCompletion* c = req.add_completions();
    c->set_completion(v.completion());
    *c->mutable_token_ids() = v.token_ids();
    *c->mutable_behaviour_logprobs() = v.logprobs();
    *c->mutable_reward() = v.reward();
    c->set_completion_id(v.variant_id());
  }
  if (env.spec->control() == "permuted-rewards") {
    // The negative control: the same rewards, dealt to the completions at
    // random (Fisher-Yates from the group's own seed).
    std::mt19937_64 rng(env.spec->seed() ^ StableHash64("control/" + key.id));
    auto& cs = *req.mutable_completions();
    for (int i = cs.size() - 1; i > 0; --i) {
      const int j = static_cast<int>(rng() % static_cast<uint64_t>(i + 1));
      cs[i].mutable_reward()->Swap(cs[j].mutable_reward());
    }
  }
  return req;
}

absl::Status SendExamples(const v1::SubmitExamplesRequest& request, const StageEnv& env) {
  if (request.examples_size() == 0) return absl::OkStatus();
  return env.patiently("crl-trainer", [&]() -> absl::Status {
    return env.trainer->SubmitExamples(request, *env.context).status();
  });
}

absl::Status SendGroup(const v1::SubmitGroupRequest& request, const StageEnv& env) {
  return env.patiently("crl-trainer", [&]() -> absl::Status {
    return env.trainer->SubmitGroup(request, *env.context).status();
  });
}

}  // namespace crl::orchestrator
