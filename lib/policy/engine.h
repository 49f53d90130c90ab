// Continuous batching over one CausalLm: requests from any thread join the
// running batch between decode steps, so many small requests share forward
// passes. Each sequence owns a slot of a preallocated KV cache (slot mode of
// KvCache); the prompts of requests admitted together are prefilled in one
// forward pass (right padded), each once, and a prompt's KV prefix is copied
// to the slots of its other n - 1 samples. Sampling runs on the device
// (sampling.h): a seeded sequence gets the same tokens whatever else is in
// the batch. Each sampled token's log-probability under the raw logits is
// recorded (what a trainer recomputes). On a CUDA device a decode step and
// its sampling are replayed from CUDA graphs (decode_graphs.h).
//
//   CRL_ASSIGN_OR_RETURN(auto engine, GenerationEngine::Start(model, {}));
//   CRL_ASSIGN_OR_RETURN(std::vector<Generation> g, engine->Generate(request, context));
#ifndef CRL_LIB_POLICY_ENGINE_H_
#define CRL_LIB_POLICY_ENGINE_H_

#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "common/context.h"
#include "lib/policy/generate.h"
#include "lib/policy/model.h"

namespace crl::policy {

// max_len when none is given and the model's context is longer.
inline constexpr int kDefaultMaxLen = 4096;

struct EngineOptions {
  // Sequences decoded together (KV cache slots).
  int max_batch = 64;
  // Positions per slot, prompt included (0: the model's
  // max_position_embeddings, at most kDefaultMaxLen: the KV cache holds
  // max_batch x max_len positions, too much at a 32k context by default).
  int max_len = 0;
  // Padded prompt tokens per prefill forward pass: requests admitted
  // together are prefilled together up to this (a longer prompt goes alone).
  int prefill_tokens = 16384;
  // On a CUDA device, replay decode steps from CUDA graphs (decode_graphs.h)
  // when this build has them; false decodes op by op.
  bool cuda_graphs = true;
};

struct GenerationRequest {
  std::vector<int> prompt;
  // Samples of the prompt; sample i uses seed params.seed + i.
  int n = 1;
  SamplingParams params;
  // Called on the engine thread with a sequence's tokens after each new one;
  // true ends the sequence with finish reason "stop" (stop strings). Must be
  // cheap and thread-safe.
  std::function<bool(const std::vector<int>& tokens)> stop;
  // Also record the this-many most likely tokens at each position
  // (Generation::top_logprobs), 0 to kMaxTopLogprobs.
  int top_logprobs = 0;
  // Called on the engine thread after each new token of sample `sample`,
  // with what it has generated so far (streaming); the stop decision comes
  // after. Must be cheap and thread-safe, and must not call the engine.
  std::function<void(int sample, const Generation& so_far)> on_token;
};

// Thread-safe. The engine's thread is the only one that runs the model.
class GenerationEngine {
 public:
  // Allocates the KV cache and starts the thread. INVALID_ARGUMENT for a
  // max_batch below 1 or a max_len beyond the model's positions.
  static absl::StatusOr<std::unique_ptr<GenerationEngine>> Start(std::shared_ptr<CausalLm> model,
                                                                 EngineOptions options);
  // Ends the thread; requests still waiting answer UNAVAILABLE.
  ~GenerationEngine();

  // Blocks until the n samples finish. INVALID_ARGUMENT for an empty
  // prompt, an id outside the vocabulary, n outside [1, max_batch], a
  // prompt + max_new_tokens beyond max_len, or top_logprobs outside
  // [0, kMaxTopLogprobs]; CANCELLED / DEADLINE_EXCEEDED
  // when `context` ends first (its sequences leave the batch); INTERNAL when
  // LibTorch fails (the message says why).
  absl::StatusOr<std::vector<Generation>> Generate(const GenerationRequest& request,
                                                   const RequestContext& context);

  // Requests waiting for slots, sequences being decoded, tokens generated.
  int waiting() const;
  int active() const;
  int64_t tokens_generated() const;
  // CUDA graphs of decode steps captured so far (0 without them).
  int decode_graphs() const;
  const CausalLm& model() const { return *model_; }

  struct Impl;

 private:
  GenerationEngine(std::shared_ptr<CausalLm> model, std::unique_ptr<Impl> impl);
  std::shared_ptr<CausalLm> model_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace crl::policy

#endif  // CRL_LIB_POLICY_ENGINE_H_
