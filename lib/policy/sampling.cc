#include "lib/policy/sampling.h"

#include <limits>

namespace crl::policy {
namespace {

// splitmix64's finaliser on int64 tensors (wrapping arithmetic; the right
// shifts are arithmetic, which still mixes every bit deterministically).
torch::Tensor Mix(torch::Tensor x) {
  x = torch::bitwise_xor(x, x.__rshift__(30)) * static_cast<int64_t>(0xBF58476D1CE4E5B9ULL);
  x = torch::bitwise_xor(x, x.__rshift__(27)) * static_cast<int64_t>(0x94D049BB133111EBULL);
  return torch::bitwise_xor(x, x.__rshift__(31));
}

}  // namespace

RowSampling HostRowSampling::ToDevice(torch::Device device) const {
  RowSampling r;
  r.temperature = torch::tensor(temperature).to(device);
  r.top_p = torch::tensor(top_p).to(device);
  r.top_k = torch::tensor(top_k).to(device);
  r.seed = torch::tensor(seed).to(device);
  r.step = torch::tensor(step).to(device);
  r.filter = filter;
  r.top_n = top_n;
  return r;
}

torch::Tensor CounterUniform(const torch::Tensor& seed, const torch::Tensor& step, int64_t vocab) {
  auto longs = torch::TensorOptions().dtype(torch::kLong).device(seed.device());
  torch::Tensor row = Mix(seed * static_cast<int64_t>(0x9E3779B97F4A7C15ULL) + step);  // [B]
  torch::Tensor x = Mix(row.unsqueeze(1) + torch::arange(vocab, longs).unsqueeze(0) *
                                               static_cast<int64_t>(0xD6E8FEB86659FD93ULL));
  // 24 random bits (a float's precision), centred in their interval:
  // strictly inside (0, 1).
  torch::Tensor bits = torch::bitwise_and(x, (int64_t{1} << 24) - 1).to(torch::kFloat32);
  return (bits + 0.5f) / static_cast<float>(int64_t{1} << 24);
}

Sampled SampleNext(const torch::Tensor& logits, const RowSampling& r) {
  const int64_t V = logits.size(1);
  torch::Tensor logp = torch::log_softmax(logits, -1);
  torch::Tensor greedy = logits.argmax(-1);
  torch::Tensor scaled = logits / r.temperature.clamp_min(1e-6).unsqueeze(1);
  const float neg_inf = -std::numeric_limits<float>::infinity();
  if (r.filter) {
    auto [sorted, order] = scaled.sort(/*dim=*/-1, /*descending=*/true);
    torch::Tensor rank = torch::arange(V, r.top_k.options()).unsqueeze(0);
    // top-k: ranks at or beyond k go (k = 0 keeps all).
    torch::Tensor drop = (r.top_k.unsqueeze(1) > 0) & (rank >= r.top_k.unsqueeze(1));
    // top-p: a token goes when the mass strictly before it reaches top_p
    // (the most likely token always stays).
    torch::Tensor probs = torch::softmax(sorted.masked_fill(drop, neg_inf), -1);
    torch::Tensor before = probs.cumsum(-1) - probs;
    drop = drop | (before >= r.top_p.unsqueeze(1));
    sorted = sorted.masked_fill(drop, neg_inf);
    scaled = torch::empty_like(scaled).scatter_(-1, order, sorted);
  }
  torch::Tensor gumbel = -torch::log(-torch::log(CounterUniform(r.seed, r.step, V)));
  torch::Tensor sampled = (scaled + gumbel).argmax(-1);
  torch::Tensor tokens = torch::where(r.temperature > 0, sampled, greedy);
  Sampled out{tokens, logp.gather(1, tokens.unsqueeze(1)).squeeze(1), {}, {}};
  if (r.top_n > 0) {
    auto [values, ids] = logp.topk(std::min(r.top_n, V), /*dim=*/-1);
    out.top_tokens = ids;
    out.top_logprobs = values;
  }
  return out;
}

}  // namespace crl::policy
