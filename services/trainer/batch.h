// Sequences to train on, laid out as micro-batches: right-padded rows (one
// sequence per row) or packed rows (several sequences per row, attention
// kept inside each by segment ids), each trained token located by the flat
// position of the hidden state that predicts it, with its loss weight.
//
// Weights come from the whole (global) batch, so gradient accumulation over
// micro-batches and data-parallel ranks sums to exactly the loss of the
// batch as one: token-mean weighs each trained token 1 / (all trained tokens),
// sequence-mean 1 / (sequences * the sequence's own tokens).
#ifndef CRL_SERVICES_TRAINER_BATCH_H_
#define CRL_SERVICES_TRAINER_BATCH_H_

#include <torch/torch.h>

#include <string>
#include <vector>

#include "services/trainer/objective.h"

namespace crl::trainer {

// One sequence: a context the loss ignores, then the tokens trained on.
struct TrainSequence {
  std::string id;  // the group or example it came from (recorded per version)
  std::vector<int> prompt;      // at least one token
  std::vector<int> completion;  // at least one token
  // Log-probabilities of the completion under the policy that sampled it,
  // one per token; empty: recomputed by the trainer before the update.
  std::vector<float> old_logprobs;
  double advantage = 0;        // policy-gradient objectives only
  int64_t policy_version = 0;  // the version that sampled it
  double reward = 0;           // for statistics
};

struct MicroBatch {
  torch::Tensor ids;          // [B, T] int64
  torch::Tensor segment_ids;  // [B, T] int64 for packed rows, else undefined
  // Per trained token [M]: the flat index (row * T + column) of the hidden
  // state that predicts it, the token, its loss weight, advantage, and old
  // and reference log-probabilities (filled by the trainer when empty).
  torch::Tensor positions, targets, weights, advantages, old_logprobs, ref_logprobs;
  int64_t tokens = 0;  // real tokens in the rows (throughput)
  // The sequences here (indices into the batch) and each one's span of
  // trained tokens in [M], in order.
  std::vector<int> sequences;
  std::vector<std::pair<int64_t, int64_t>> spans;
};

struct LayoutOptions {
  // Rows x longest row per micro-batch at most (one row may exceed it alone).
  int64_t micro_batch_tokens = 16384;
  // Packed row length; sequences longer are refused earlier (intake).
  int64_t max_seq_len = 4096;
  bool pack = false;
  Aggregation aggregation = Aggregation::kTokenMean;
};

// Micro-batches of `batch[i]` for i in `mine` (this rank's share), weights
// computed over all of `batch`. Old logprobs are copied when every sequence
// here has them; otherwise old_logprobs is left undefined.
std::vector<MicroBatch> LayOut(const std::vector<TrainSequence>& batch,
                               const std::vector<int>& mine, const LayoutOptions& options);

// The indices of `batch` that rank `rank` of `world` trains on: every
// world-th sequence.
std::vector<int> Shard(size_t batch_size, int rank, int world);

}  // namespace crl::trainer

#endif  // CRL_SERVICES_TRAINER_BATCH_H_
