// Sampling from a CausalLm: the parameters and results of generation, and a
// one-shot Generate over a batch of prompts (a GenerationEngine started for
// the call; engine.h for long-lived serving). Temperature / top-p / top-k, a
// seed per prompt, stop tokens, and each sampled token's log-probability
// under the model (raw logits, temperature 1: what a trainer recomputes).
#ifndef CRL_LIB_POLICY_GENERATE_H_
#define CRL_LIB_POLICY_GENERATE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "lib/policy/model.h"

namespace crl::policy {

struct SamplingParams {
  // 0: greedy.
  double temperature = 1.0;
  // Nucleus: the smallest set of tokens whose probability reaches top_p (1: all).
  double top_p = 1.0;
  // Only the k most likely tokens (0: all).
  int top_k = 0;
  int max_new_tokens = 256;
  // Prompt i samples with seed + i: the same request gives the same tokens,
  // whatever else is in the batch.
  uint64_t seed = 0;
  // Generation of a prompt ends after any of these (the token is kept).
  std::vector<int> stop_ids;
};

// One of the most likely tokens at a position, and its log-probability
// under the raw logits.
struct TopToken {
  int token = 0;
  float logprob = 0;
};

// At most this many top tokens a position (the OpenAI API's limit).
inline constexpr int kMaxTopLogprobs = 20;

struct Generation {
  std::vector<int> tokens;      // the new tokens (a stop token included)
  std::vector<float> logprobs;  // log p(token | everything before), one per token
  // When asked for (GenerationRequest::top_logprobs): the most likely tokens
  // at each position, most likely first, one list per token; empty otherwise.
  std::vector<std::vector<TopToken>> top_logprobs;
  std::string finish_reason;    // "stop" or "length"
  double first_token_seconds = 0;  // from the request to its first token
  double seconds = 0;              // from the request to the last token
};

// One generation per prompt, all decoded together. INVALID_ARGUMENT for an
// empty prompt, a token id out of the vocabulary or a prompt longer than the
// model's positions; INTERNAL when LibTorch fails (the message says why).
absl::StatusOr<std::vector<Generation>> Generate(CausalLm& model,
                                                 const std::vector<std::vector<int>>& prompts,
                                                 const SamplingParams& params);

}  // namespace crl::policy

#endif  // CRL_LIB_POLICY_GENERATE_H_
