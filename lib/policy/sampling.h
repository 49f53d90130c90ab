// Choosing the next token of many sequences at once, on the model's device:
// temperature, top-k and top-p per row, and noise that depends only on
// (seed, step, token), so a seeded sequence samples the same tokens whatever
// else shares its batch. The noise is a counter-based hash (splitmix64 of
// the three) turned into Gumbel noise, and the token is
// argmax(logits / temperature + gumbel) over the tokens top-k and top-p keep:
// an exact sample of the filtered softmax. Temperature 0 is greedy.
#ifndef CRL_LIB_POLICY_SAMPLING_H_
#define CRL_LIB_POLICY_SAMPLING_H_

#include <torch/torch.h>

#include <vector>

namespace crl::policy {

// One value per row, on the logits' device.
struct RowSampling {
  torch::Tensor temperature;  // [B] float32; <= 0: greedy
  torch::Tensor top_p;        // [B] float32; 1: off
  torch::Tensor top_k;        // [B] int64; 0: off
  torch::Tensor seed;         // [B] int64
  torch::Tensor step;         // [B] int64: the token's index in its sequence
  // Some row has top_k > 0 or top_p < 1 (known on the host: no device sync).
  bool filter = false;
  // The most likely tokens to report per row (Sampled::top_*); 0: none.
  int64_t top_n = 0;
};

// The same values on the host, as the engine gathers them row by row.
struct HostRowSampling {
  std::vector<float> temperature, top_p;
  std::vector<int64_t> top_k, seed, step;
  bool filter = false;
  int64_t top_n = 0;
  // Rows with default values (greedy, no filter, seed 0, step 0).
  explicit HostRowSampling(size_t rows = 0)
      : temperature(rows, 0.f), top_p(rows, 1.f), top_k(rows, 0), seed(rows, 0), step(rows, 0) {}
  RowSampling ToDevice(torch::Device device) const;
};

struct Sampled {
  torch::Tensor tokens;    // [B] int64
  torch::Tensor logprobs;  // [B] float32: log p(token) under the raw logits (temperature 1)
  // With rows.top_n > 0: each row's top_n most likely tokens, most likely
  // first ([B, top_n] int64), and their log-probabilities as above (float32).
  torch::Tensor top_tokens, top_logprobs;
};

// logits [B, V] float32.
Sampled SampleNext(const torch::Tensor& logits, const RowSampling& rows);

// Uniform noise in (0, 1) for every (row, token): [B, V] float32, a pure
// function of seed, step and the token id.
torch::Tensor CounterUniform(const torch::Tensor& seed, const torch::Tensor& step, int64_t vocab);

}  // namespace crl::policy

#endif  // CRL_LIB_POLICY_SAMPLING_H_
