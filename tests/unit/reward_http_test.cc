// The OpenRLHF reward endpoint's conversions (services/cli/reward_http.h).
#include <catch2/catch.hpp>

#include "services/cli/reward_http.h"

namespace crl::cli {
namespace {

using nlohmann::json;

v1::RunSpec Spec() {
  v1::RunSpec spec;
  spec.add_tasks()->set_name("row_sum");
  spec.add_tasks()->set_name("softmax_rows");
  return spec;
}

v1::Variant Scored(v1::Verdict verdict, double speedup, v1::RewardStatus status, double reward) {
  v1::Variant v;
  v.set_task_name("row_sum");
  v.set_verdict(verdict);
  v.set_speedup(speedup);
  v.mutable_reward()->set_status(status);
  v.mutable_reward()->set_reward(reward);
  v.set_scored(true);
  return v;
}

}  // namespace

TEST_CASE("OpenRLHF requests: the response after the prompt, labels name tasks, errors name the field",
          "[reward_http]") {
  const json body = {{"query", {"PROMPT ```cpp ref``` ANSWER ```cpp mine```", "no prompt here"}},
                     {"prompts", {"PROMPT ```cpp ref```", "elsewhere"}},
                     {"labels", {"row_sum", "softmax_rows"}}};
  auto req = ParseRewardRequest(body, Spec());
  REQUIRE(req.ok());
  REQUIRE(req->items_size() == 2);
  CHECK(req->items(0).completion() == " ANSWER ```cpp mine```");  // the reference's block is not the answer
  CHECK(req->items(0).task_name() == "row_sum");
  CHECK(req->items(1).completion() == "no prompt here");
  CHECK(req->spec().tasks_size() == 2);

  auto message = [](const json& b) {
    auto r = ParseRewardRequest(b, Spec());
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == absl::StatusCode::kInvalidArgument);
    return std::string(r.status().message());
  };
  CHECK_THAT(message(json::array()), Catch::Contains("body: a JSON object"));
  CHECK_THAT(message({{"labels", {"row_sum"}}}), Catch::Contains("query: required"));
  CHECK_THAT(message({{"query", {"a"}}}), Catch::Contains("labels: required"));
  CHECK_THAT(message({{"query", {"a", "b"}}, {"labels", {"row_sum"}}}), Catch::Contains("labels: 1 for 2 queries"));
  CHECK_THAT(message({{"query", {"a"}}, {"labels", {"matmul"}}}),
             Catch::Contains("labels[0]: 'matmul' is not a task of the reward spec"));
  CHECK_THAT(message({{"query", {"a", 3}}, {"labels", {"row_sum", "row_sum"}}}), Catch::Contains("query[1]: not a string"));
  CHECK_THAT(message({{"query", {"a"}}, {"prompts", {"p", "q"}}, {"labels", {"row_sum"}}}),
             Catch::Contains("prompts: 2 for 1 queries"));
}

TEST_CASE("OpenRLHF responses: rewards in order, withheld is 0 with its flag, infrastructure is no number",
          "[reward_http]") {
  v1::ScoreCompletionsResponse scored;
  *scored.add_results() = Scored(v1::VERDICT_OK, 1.5, v1::REWARD_STATUS_OK, 0.5);
  *scored.add_results() = Scored(v1::VERDICT_WRONG_ANSWER, 0, v1::REWARD_STATUS_OK, -1);
  v1::Variant flagged = Scored(v1::VERDICT_OK, 9.0, v1::REWARD_STATUS_WITHHELD, 0);
  flagged.add_flags(v1::FLAG_SIDE_STREAM);
  *scored.add_results() = flagged;
  v1::Variant rejected = Scored(v1::VERDICT_UNSPECIFIED, 0, v1::REWARD_STATUS_OK, -1);
  rejected.set_parse_error(v1::PARSE_ERROR_NO_CODE_BLOCK);
  *scored.add_results() = rejected;
  auto out = RewardResponse(scored);
  REQUIRE(out.ok());
  CHECK((*out)["rewards"] == json({0.5, -1.0, 0.0, -1.0}));
  CHECK((*out)["scores"] == (*out)["rewards"]);
  CHECK((*out)["extra_logs"]["verified"] == json({1.0, 0.0, 1.0, 0.0}));
  CHECK((*out)["extra_logs"]["speedup"] == json({1.5, 0.0, 9.0, 0.0}));
  CHECK((*out)["extra_logs"]["withheld"] == json({0.0, 0.0, 1.0, 0.0}));
  CHECK((*out)["details"][2]["flags"] == json({"FLAG_SIDE_STREAM"}));
  CHECK((*out)["details"][3]["verdict"] == "PARSE_ERROR_NO_CODE_BLOCK");

  v1::Variant infra = Scored(v1::VERDICT_UNSPECIFIED, 0, v1::REWARD_STATUS_UNSPECIFIED, 0);
  infra.set_infra_failure(true);
  infra.set_infra_detail("evaluate (3 attempts): worker down");
  *scored.add_results() = infra;
  auto failed = RewardResponse(scored);
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.status().code() == absl::StatusCode::kUnavailable);
  CHECK_THAT(std::string(failed.status().message()), Catch::Contains("item 4 (row_sum)"));
  CHECK_THAT(std::string(failed.status().message()), Catch::Contains("worker down"));
}

}  // namespace crl::cli
