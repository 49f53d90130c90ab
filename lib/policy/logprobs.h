// Log-probabilities of chosen tokens straight from hidden states: the output
// embedding is applied a chunk of rows at a time, so the float32
// [rows, vocab] log-softmax is never alive for more than one chunk. The
// trainer's hot path: with a 150k vocabulary, materialised float32 logits
// would dwarf the model's activations.
//
// Backward recomputes each chunk's logits from the saved hidden states (one
// more output-embedding matmul instead of [rows, vocab] kept alive; keeping
// them measured no faster on an H100: docs/benchmarks.md).
//
//   torch::Tensor h = model.Hidden(ids, options);               // [B, T, H]
//   torch::Tensor rows = h.view({-1, H}).index_select(0, where); // [M, H]
//   ChunkedLogprobs lp = ChunkedTokenLogprobs(rows, model.OutputEmbedding(), targets);
//   loss = -(lp.logprobs * weights).sum();  lp.entropy has no gradient
#ifndef CRL_LIB_POLICY_LOGPROBS_H_
#define CRL_LIB_POLICY_LOGPROBS_H_

#include <torch/torch.h>

namespace crl::policy {

struct ChunkedLogprobs {
  torch::Tensor logprobs;  // [M] float32, differentiable in hidden and weight
  // [M] float32 entropy of each row's distribution (no gradient); undefined
  // when not asked for.
  torch::Tensor entropy;
};

struct LogprobOptions {
  // Rows per chunk (0: about 2^27 logits per chunk).
  int64_t chunk_rows = 0;
  // Also compute each row's entropy (two more passes over the logits).
  bool entropy = true;
};

// log p(ids[t] | ids[<t]) for t >= 1: [B, T-1] float32 from logits [B, T, V]
// (all of them materialised: for short sequences and checks).
torch::Tensor TokenLogprobs(const torch::Tensor& logits, const torch::Tensor& ids);

// hidden [M, H], weight [V, H], targets [M] int64. Under CUDA autocast the
// matmuls run in bfloat16 and the log-softmax accumulates in float32.
ChunkedLogprobs ChunkedTokenLogprobs(const torch::Tensor& hidden, const torch::Tensor& weight,
                                     const torch::Tensor& targets, const LogprobOptions& options = {});

}  // namespace crl::policy

#endif  // CRL_LIB_POLICY_LOGPROBS_H_
