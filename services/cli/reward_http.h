// The reward endpoint an OpenRLHF trainer calls (--remote_rm_url
// http://HOST:PORT/get_reward), served by `crl reward serve`: the request
// {"query": [...], "prompts": [...], "labels": [...]} (each query is the
// prompt followed by the response; each label names a task of the spec),
// the answer {"rewards": [...], "scores": [...], "extra_logs": {...},
// "details": [...]}.
// gRPC-free: the conversions on both sides of ScoreCompletions.
#ifndef CRL_SERVICES_CLI_REWARD_HTTP_H_
#define CRL_SERVICES_CLI_REWARD_HTTP_H_

#include <string>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "crl/v1/orchestrator.pb.h"

namespace crl::cli {

// The items to score (the spec is the caller's). INVALID_ARGUMENT names the
// field and index: missing arrays, lengths that differ, a label that is not
// a task of `spec`.
absl::StatusOr<v1::ScoreCompletionsRequest> ParseRewardRequest(const nlohmann::json& body, const v1::RunSpec& spec);

// The response body. An item whose infrastructure failed (or whose reward
// must be retried) is no number at all: UNAVAILABLE naming it, which the
// server answers with 503 so the trainer retries the batch. A withheld
// reward (a flag that says the timing may be gamed) is 0.0, neither reward
// nor penalty. extra_logs holds numbers per item (verified, speedup,
// withheld); "details" the verdicts, reward statuses and flags.
absl::StatusOr<nlohmann::json> RewardResponse(const v1::ScoreCompletionsResponse& scored);

}  // namespace crl::cli

#endif  // CRL_SERVICES_CLI_REWARD_HTTP_H_
