// Log-probabilities of chosen tokens straight from hidden states: the output
// embedding is applied a chunk of rows at a time and the [rows, vocab]
// logits are never all alive at once, in the forward pass or the backward
// (which recomputes each chunk's logits from the saved hidden states and
// per-row log-normalisers). The trainer's hot path: with a 150k vocabulary,
// materialised float32 logits would dwarf the model's activations.
//
//   torch::Tensor h = model.Hidden(ids, options);               // [B, T, H]
//   torch::Tensor rows = h.view({-1, H}).index_select(0, where); // [M, H]
//   TokenLogprobs lp = ChunkedTokenLogprobs(rows, model.OutputEmbedding(), targets);
//   loss = -(lp.logprobs * weights).sum();  lp.entropy has no gradient
#ifndef CRL_LIB_POLICY_LOGPROBS_H_
#define CRL_LIB_POLICY_LOGPROBS_H_

#include <torch/torch.h>

namespace crl::policy {

struct ChunkedLogprobs {
  torch::Tensor logprobs;  // [M] float32, differentiable in hidden and weight
  torch::Tensor entropy;   // [M] float32 entropy of each row's distribution (no gradient)
};

// hidden [M, H], weight [V, H], targets [M] int64. `chunk_rows` rows per
// chunk (0: about 2^27 logits per chunk). Under CUDA autocast the matmuls
// run in bfloat16, the softmax in float32.
ChunkedLogprobs ChunkedTokenLogprobs(const torch::Tensor& hidden, const torch::Tensor& weight,
                                     const torch::Tensor& targets, int64_t chunk_rows = 0);

}  // namespace crl::policy

#endif  // CRL_LIB_POLICY_LOGPROBS_H_
