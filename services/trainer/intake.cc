#include "services/trainer/intake.h"

#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/hash.h"
#include "common/status.h"

namespace crl::trainer {
namespace {

absl::Status Bad(const std::string& field, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", why));
}

}  // namespace

absl::StatusOr<int64_t> ParsePolicyVersion(const std::string& text, const std::string& field) {
  if (text.empty()) return 0;
  int64_t v;
  if (!absl::SimpleAtoi(text, &v) || v < 0) {
    return Bad(field, absl::StrCat("'", text, "' is not a policy version (a step number)"));
  }
  return v;
}

Intake::Intake(const policy::Tokenizer* tokenizer, absl::StatusOr<policy::ChatFormat> chat,
               IntakeOptions options)
    : tokenizer_(tokenizer), chat_(std::move(chat)), options_(options) {}

absl::Status Intake::CheckIds(const std::vector<int>& ids, const std::string& field) const {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= options_.vocab_size) {
      return Bad(absl::StrCat(field, "[", i, "]"),
                 absl::StrCat(ids[i], " is outside the vocabulary [0, ", options_.vocab_size, ")"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int>> Intake::PromptIds(
    const std::string& text, const google::protobuf::RepeatedField<int32_t>& given,
    const std::string& field) const {
  std::vector<int> ids(given.begin(), given.end());
  if (ids.empty()) {
    if (text.empty()) return Bad(field, "empty (give the prompt text or its token ids)");
    if (chat_.ok()) {
      CRL_ASSIGN_OR_RETURN(ids, policy::EncodeChat(*tokenizer_, *chat_, {{"user", text}}, true));
    } else {
      ids = tokenizer_->Encode(text, /*parse_special=*/false);
    }
  }
  CRL_RETURN_IF_ERROR(CheckIds(ids, field + "_token_ids"));
  return ids;
}

absl::StatusOr<std::vector<int>> Intake::CompletionIds(
    const std::string& text, const google::protobuf::RepeatedField<int32_t>& given,
    const std::string& field) const {
  std::vector<int> ids(given.begin(), given.end());
  if (ids.empty() && !text.empty()) {
    ids = tokenizer_->Encode(text, /*parse_special=*/false);
    // The model should learn to end its turn.
    if (chat_.ok()) {
      std::vector<int> end = policy::EndOfTurnIds(*tokenizer_, *chat_);
      if (!end.empty()) ids.push_back(end.front());
    }
  }
  if (ids.empty()) return Bad(field, "empty completion");
  CRL_RETURN_IF_ERROR(CheckIds(ids, field));
  return ids;
}

absl::StatusOr<IntakeGroup> Intake::Group(const v1::SubmitGroupRequest& r) const {
  IntakeGroup g;
  CRL_ASSIGN_OR_RETURN(g.policy_version, ParsePolicyVersion(r.policy_version(), "policy_version"));
  if (r.completions_size() < 2) {
    return Bad("completions", absl::StrCat("a group needs at least two (got ", r.completions_size(), ")"));
  }
  CRL_ASSIGN_OR_RETURN(std::vector<int> prompt, PromptIds(r.prompt(), r.prompt_token_ids(), "prompt"));
  std::string content = absl::StrCat(r.run_id(), "|", prompt.size());
  for (int t : prompt) absl::StrAppend(&content, ",", t);
  std::vector<TrainSequence> usable;
  std::vector<double> rewards;
  for (int i = 0; i < r.completions_size(); ++i) {
    const v1::ScoredCompletion& c = r.completions(i);
    const std::string field = absl::StrCat("completions[", i, "]");
    CRL_ASSIGN_OR_RETURN(std::vector<int> ids,
                         CompletionIds(c.completion(), c.token_ids(), field + ".token_ids"));
    if (c.behaviour_logprobs_size() > 0 && c.behaviour_logprobs_size() != static_cast<int>(ids.size())) {
      return Bad(field + ".behaviour_logprobs",
                 absl::StrCat(c.behaviour_logprobs_size(), " values for ", ids.size(), " tokens"));
    }
    for (int j = 0; j < c.behaviour_logprobs_size(); ++j) {
      const float lp = c.behaviour_logprobs(j);
      if (!std::isfinite(lp) || lp > 1e-4f) {
        return Bad(absl::StrCat(field, ".behaviour_logprobs[", j, "]"),
                   absl::StrCat(lp, " is not a log-probability (finite, <= 0)"));
      }
    }
    if (static_cast<int64_t>(prompt.size() + ids.size()) > options_.max_seq_len) {
      return Bad(field, absl::StrCat("prompt + completion is ", prompt.size() + ids.size(),
                                     " tokens; max_seq_len is ", options_.max_seq_len));
    }
    const bool ok = c.reward().status() == v1::REWARD_STATUS_OK;
    if (ok && !std::isfinite(c.reward().reward())) {
      return Bad(field + ".reward.reward", absl::StrCat(c.reward().reward(), " is not finite"));
    }
    absl::StrAppend(&content, "|", ok ? c.reward().reward() : 0.0, ":");
    for (int t : ids) absl::StrAppend(&content, t, ",");
    if (!ok) continue;  // infrastructure retry or withheld: not a zero, not trained
    TrainSequence s;
    s.prompt = prompt;
    s.completion = std::move(ids);
    s.old_logprobs.assign(c.behaviour_logprobs().begin(), c.behaviour_logprobs().end());
    s.reward = c.reward().reward();
    s.policy_version = g.policy_version;
    usable.push_back(std::move(s));
    rewards.push_back(c.reward().reward());
  }
  g.id = r.group_id().empty() ? "sha256:" + Sha256Hex(content) : r.group_id();
  g.used = static_cast<int>(usable.size());
  if (usable.size() < 2) {
    g.outcome = v1::GROUP_OUTCOME_SKIPPED_TOO_FEW;
    return g;
  }
  g.advantages = GroupAdvantages(rewards, options_.advantages);
  if (g.advantages.empty()) {
    g.outcome = v1::GROUP_OUTCOME_SKIPPED_EQUAL_REWARDS;
    return g;
  }
  for (size_t i = 0; i < usable.size(); ++i) {
    usable[i].advantage = g.advantages[i];
    usable[i].id = g.id;
  }
  g.sequences = std::move(usable);
  return g;
}

absl::StatusOr<std::vector<TrainSequence>> Intake::Examples(const v1::SubmitExamplesRequest& r) const {
  if (r.examples_size() == 0) return Bad("examples", "none given");
  std::vector<TrainSequence> out;
  for (int i = 0; i < r.examples_size(); ++i) {
    const v1::Example& e = r.examples(i);
    const std::string field = absl::StrCat("examples[", i, "]");
    TrainSequence s;
    if (e.prompt_token_ids_size() == 0 && e.messages_size() > 0) {
      if (!chat_.ok()) return Bad(field + ".messages", std::string(chat_.status().message()));
      std::vector<policy::ChatMessage> messages;
      for (const auto& m : e.messages()) messages.push_back({m.role(), m.content()});
      CRL_ASSIGN_OR_RETURN(s.prompt, policy::EncodeChat(*tokenizer_, *chat_, messages, true));
      CRL_RETURN_IF_ERROR(CheckIds(s.prompt, field + ".messages"));
    } else {
      CRL_ASSIGN_OR_RETURN(s.prompt, PromptIds(e.prompt(), e.prompt_token_ids(), field + ".prompt"));
    }
    CRL_ASSIGN_OR_RETURN(s.completion, CompletionIds(e.completion(), e.completion_token_ids(),
                                                     field + ".completion_token_ids"));
    if (static_cast<int64_t>(s.prompt.size() + s.completion.size()) > options_.max_seq_len) {
      return Bad(field, absl::StrCat("prompt + completion is ", s.prompt.size() + s.completion.size(),
                                     " tokens; max_seq_len is ", options_.max_seq_len));
    }
    std::string content;
    for (int t : s.prompt) absl::StrAppend(&content, t, ",");
    absl::StrAppend(&content, "|");
    for (int t : s.completion) absl::StrAppend(&content, t, ",");
    s.id = e.example_id().empty() ? "sha256:" + Sha256Hex(content) : e.example_id();
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace crl::trainer
