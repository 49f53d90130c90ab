#include "services/cli/reward_http.h"

#include <set>

#include "absl/strings/str_cat.h"

namespace crl::cli {

using nlohmann::json;

absl::StatusOr<v1::ScoreCompletionsRequest> ParseRewardRequest(const json& body, const v1::RunSpec& spec) {
  if (!body.is_object()) return absl::InvalidArgumentError("body: a JSON object {query, prompts, labels}");
  auto strings = [&](const char* key, bool required) -> absl::StatusOr<std::vector<std::string>> {
    std::vector<std::string> out;
    if (!body.contains(key) || body[key].is_null()) {
      if (required) return absl::InvalidArgumentError(absl::StrCat(key, ": required (a list of strings)"));
      return out;
    }
    if (!body[key].is_array()) return absl::InvalidArgumentError(absl::StrCat(key, ": a list of strings"));
    for (size_t i = 0; i < body[key].size(); ++i) {
      if (!body[key][i].is_string()) return absl::InvalidArgumentError(absl::StrCat(key, "[", i, "]: not a string"));
      out.push_back(body[key][i].get<std::string>());
    }
    return out;
  };
  auto query = strings("query", true);
  if (!query.ok()) return query.status();
  auto prompts = strings("prompts", false);
  if (!prompts.ok()) return prompts.status();
  auto labels = strings("labels", true);
  if (!labels.ok()) return labels.status();
  if (labels->size() != query->size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("labels: ", labels->size(), " for ", query->size(), " queries (one task name per query)"));
  }
  if (!prompts->empty() && prompts->size() != query->size()) {
    return absl::InvalidArgumentError(absl::StrCat("prompts: ", prompts->size(), " for ", query->size(), " queries"));
  }
  std::set<std::string> tasks;
  for (const auto& t : spec.tasks()) tasks.insert(t.name());
  v1::ScoreCompletionsRequest req;
  *req.mutable_spec() = spec;
  for (size_t i = 0; i < query->size(); ++i) {
    if (!tasks.count((*labels)[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat("labels[", i, "]: '", (*labels)[i], "' is not a task of the reward spec"));
    }
    // The response is what follows the prompt (the prompt has the
    // reference's code block, which must not be taken for the answer).
    std::string completion = (*query)[i];
    if (!prompts->empty() && !(*prompts)[i].empty()) {
      const size_t at = completion.rfind((*prompts)[i]);
      if (at != std::string::npos) completion = completion.substr(at + (*prompts)[i].size());
    }
    v1::ScoreItem* item = req.add_items();
    item->set_task_name((*labels)[i]);
    item->set_completion(std::move(completion));
  }
  return req;
}

absl::StatusOr<json> RewardResponse(const v1::ScoreCompletionsResponse& scored) {
  // extra_logs: numbers only (OpenRLHF logs their means); the words go in
  // "details", which it ignores.
  json rewards = json::array(), verified = json::array(), speedups = json::array(), withheld = json::array(),
       details = json::array();
  for (int i = 0; i < scored.results_size(); ++i) {
    const v1::Variant& v = scored.results(i);
    if (v.infra_failure() || v.reward().status() == v1::REWARD_STATUS_INFRA_RETRY ||
        v.reward().status() == v1::REWARD_STATUS_UNSPECIFIED) {
      return absl::UnavailableError(absl::StrCat(
          "item ", i, " (", v.task_name(), "): infrastructure failure, no reward: ",
          v.infra_failure() ? v.infra_detail() : v.reward().explanation()));
    }
    const bool ok = v.reward().status() == v1::REWARD_STATUS_OK;
    const bool correct = v.verdict() == v1::VERDICT_OK;
    rewards.push_back(ok ? v.reward().reward() : 0.0);
    verified.push_back(correct ? 1.0 : 0.0);
    speedups.push_back(correct ? v.speedup() : 0.0);
    withheld.push_back(ok ? 0.0 : 1.0);
    json flags = json::array();
    for (int flag : v.flags()) flags.push_back(v1::Flag_Name(static_cast<v1::Flag>(flag)));
    details.push_back({{"task", v.task_name()},
                       {"verdict", v.parse_error() != v1::PARSE_ERROR_UNSPECIFIED ? v1::ParseError_Name(v.parse_error())
                                                                                   : v1::Verdict_Name(v.verdict())},
                       {"reward_status", v1::RewardStatus_Name(v.reward().status())},
                       {"explanation", v.reward().explanation()},
                       {"flags", flags}});
  }
  return json{{"rewards", rewards},
              {"scores", rewards},
              {"extra_logs", {{"verified", verified}, {"speedup", speedups}, {"withheld", withheld}}},
              {"details", details}};
}

}  // namespace crl::cli
