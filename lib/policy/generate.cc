#include "lib/policy/generate.h"

#include <ATen/Context.h>

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace crl::policy {
namespace {

// Next-token distribution after temperature, top-k and top-p: probabilities
// [V] (float32) for one row of logits.
torch::Tensor Filter(torch::Tensor logits, const SamplingParams& p) {
  logits = logits / p.temperature;
  const int64_t V = logits.size(0);
  if (p.top_k > 0 && p.top_k < V) {
    const torch::Tensor kth = std::get<0>(logits.topk(p.top_k)).index({p.top_k - 1});
    logits = logits.masked_fill(logits < kth, -std::numeric_limits<float>::infinity());
  }
  torch::Tensor probs = torch::softmax(logits, -1);
  if (p.top_p < 1.0) {
    auto [sorted, order] = probs.sort(/*dim=*/-1, /*descending=*/true);
    // Keep a token while the mass before it is below top_p (the first always).
    const torch::Tensor before = sorted.cumsum(-1) - sorted;
    sorted = sorted.masked_fill(before >= p.top_p, 0.0);
    probs = torch::zeros_like(probs).scatter(-1, order, sorted);
    probs = probs / probs.sum();
  }
  return probs;
}

}  // namespace

absl::StatusOr<std::vector<Generation>> Generate(CausalLm& model,
                                                 const std::vector<std::vector<int>>& prompts,
                                                 const SamplingParams& p) {
  const int64_t B = static_cast<int64_t>(prompts.size());
  if (B == 0) return std::vector<Generation>();
  const int vocab = model.config().vocab_size;
  int64_t longest = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    if (prompts[i].empty()) return absl::InvalidArgumentError(absl::StrCat("prompt ", i, ": empty"));
    for (int id : prompts[i]) {
      if (id < 0 || id >= vocab) {
        return absl::InvalidArgumentError(
            absl::StrCat("prompt ", i, ": token id ", id, " is outside the vocabulary (", vocab, ")"));
      }
    }
    longest = std::max<int64_t>(longest, prompts[i].size());
  }
  if (longest + p.max_new_tokens > model.config().max_position_embeddings) {
    return absl::InvalidArgumentError(absl::StrCat(
        "prompt (", longest, " tokens) + max_new_tokens (", p.max_new_tokens, ") exceeds the ",
        model.config().max_position_embeddings, " positions of the model"));
  }
  std::vector<Generation> out(B);
  try {
    torch::NoGradGuard no_grad;
    const bool was_training = model.module().is_training();
    model.module().eval();
    const auto dev = model.device();
    auto longs = torch::TensorOptions().dtype(torch::kLong);
    // Left padding: every prompt ends at the same column.
    torch::Tensor ids = torch::zeros({B, longest}, longs);
    torch::Tensor mask = torch::zeros({B, longest + p.max_new_tokens}, longs);
    for (int64_t b = 0; b < B; ++b) {
      const int64_t n = prompts[b].size();
      for (int64_t t = 0; t < n; ++t) ids[b][longest - n + t] = prompts[b][t];
      mask.index_put_({b, torch::indexing::Slice(longest - n, longest)}, 1);
    }
    ids = ids.to(dev);
    mask = mask.to(dev);
    std::vector<at::Generator> gens;
    for (int64_t b = 0; b < B; ++b) {
      gens.push_back(at::globalContext().defaultGenerator(torch::Device(torch::kCPU)).clone());
      gens.back().set_current_seed(p.seed + b);
    }
    KvCache cache;
    cache.capacity = longest + p.max_new_tokens;
    std::vector<bool> done(B, false);
    torch::Tensor logits = model.Forward(ids, mask.narrow(1, 0, longest), &cache);
    torch::Tensor last = logits.select(1, logits.size(1) - 1);  // [B, V]
    for (int step = 0; step < p.max_new_tokens; ++step) {
      const torch::Tensor logp = torch::log_softmax(last, -1).to(torch::kCPU);
      const torch::Tensor rows = last.to(torch::kCPU);
      torch::Tensor next = torch::zeros({B, 1}, longs);
      for (int64_t b = 0; b < B; ++b) {
        if (done[b]) continue;
        int64_t token;
        if (p.temperature <= 0) {
          token = rows[b].argmax().item<int64_t>();
        } else {
          token = torch::multinomial(Filter(rows[b], p), 1, false, gens[b]).item<int64_t>();
        }
        next[b][0] = token;
        out[b].tokens.push_back(static_cast<int>(token));
        out[b].logprobs.push_back(logp[b][token].item<float>());
        if (std::find(p.stop_ids.begin(), p.stop_ids.end(), token) != p.stop_ids.end()) {
          done[b] = true;
          out[b].finish_reason = "stop";
        }
      }
      if (std::all_of(done.begin(), done.end(), [](bool d) { return d; })) break;
      if (step + 1 == p.max_new_tokens) break;
      mask.index_put_({torch::indexing::Slice(), longest + step}, 1);
      logits = model.Forward(next.to(dev), mask.narrow(1, 0, longest + step + 1), &cache);
      last = logits.select(1, 0);
    }
    if (was_training) model.module().train();
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("generation failed: ", e.what()));
  }
  for (auto& g : out) {
    if (g.finish_reason.empty()) g.finish_reason = "length";
  }
  return out;
}

}  // namespace crl::policy
