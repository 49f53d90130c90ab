#include "services/trainer/batch.h"

#include <algorithm>

namespace crl::trainer {
namespace {

// A row: the sequences placed in it, in order.
struct Row {
  std::vector<int> sequences;
  int64_t length = 0;
};

int64_t Length(const TrainSequence& s) {
  return static_cast<int64_t>(s.prompt.size() + s.completion.size());
}

}  // namespace

std::vector<int> Shard(size_t batch_size, int rank, int world) {
  std::vector<int> out;
  for (size_t i = rank; i < batch_size; i += world) out.push_back(static_cast<int>(i));
  return out;
}

std::vector<MicroBatch> LayOut(const std::vector<TrainSequence>& batch,
                               const std::vector<int>& mine, const LayoutOptions& options) {
  // Weights over the global batch.
  double total_tokens = 0;
  for (const auto& s : batch) total_tokens += s.completion.size();
  const double n = static_cast<double>(batch.size());
  auto weight_of = [&](const TrainSequence& s) {
    return options.aggregation == Aggregation::kTokenMean
               ? 1.0 / total_tokens
               : 1.0 / (n * static_cast<double>(s.completion.size()));
  };

  // Rows: one sequence each, or packed first-fit in order.
  std::vector<Row> rows;
  for (int i : mine) {
    const int64_t len = Length(batch[i]);
    if (options.pack && !rows.empty() && rows.back().length + len <= options.max_seq_len) {
      rows.back().sequences.push_back(i);
      rows.back().length += len;
    } else {
      rows.push_back({{i}, len});
    }
  }
  // Micro-batches: consecutive rows while rows x longest fits the budget.
  std::vector<std::vector<int>> groups;
  int64_t longest = 0;
  for (size_t r = 0; r < rows.size(); ++r) {
    const int64_t l = std::max(longest, rows[r].length);
    if (!groups.empty() && static_cast<int64_t>(groups.back().size() + 1) * l <=
                               options.micro_batch_tokens) {
      groups.back().push_back(static_cast<int>(r));
      longest = l;
    } else {
      groups.push_back({static_cast<int>(r)});
      longest = rows[r].length;
    }
  }

  std::vector<MicroBatch> out;
  for (const auto& g : groups) {
    int64_t T = 0;
    for (int r : g) T = std::max(T, rows[r].length);
    const int64_t B = static_cast<int64_t>(g.size());
    std::vector<int64_t> ids(B * T, 0), segments(B * T, 0), positions, targets;
    std::vector<float> weights, advantages, old;
    MicroBatch mb;
    bool have_old = true;
    for (int64_t b = 0; b < B; ++b) {
      int64_t at = 0;
      int segment = 0;
      for (int i : rows[g[b]].sequences) {
        const TrainSequence& s = batch[i];
        ++segment;
        const int64_t start = static_cast<int64_t>(positions.size());
        int64_t col = at;
        for (int t : s.prompt) {
          ids[b * T + col] = t;
          segments[b * T + col++] = segment;
        }
        const double w = weight_of(s);
        for (size_t j = 0; j < s.completion.size(); ++j) {
          ids[b * T + col] = s.completion[j];
          segments[b * T + col] = segment;
          positions.push_back(b * T + col - 1);  // the hidden state before predicts it
          targets.push_back(s.completion[j]);
          weights.push_back(static_cast<float>(w));
          advantages.push_back(static_cast<float>(s.advantage));
          if (s.old_logprobs.size() == s.completion.size()) {
            old.push_back(s.old_logprobs[j]);
          } else {
            have_old = false;
          }
          ++col;
        }
        at = col;
        mb.sequences.push_back(i);
        mb.spans.emplace_back(start, static_cast<int64_t>(positions.size()));
        mb.tokens += Length(s);
      }
    }
    auto longs = torch::TensorOptions().dtype(torch::kLong);
    mb.ids = torch::tensor(ids, longs).view({B, T});
    if (options.pack) mb.segment_ids = torch::tensor(segments, longs).view({B, T});
    mb.positions = torch::tensor(positions, longs);
    mb.targets = torch::tensor(targets, longs);
    mb.weights = torch::tensor(weights);
    mb.advantages = torch::tensor(advantages);
    if (have_old) mb.old_logprobs = torch::tensor(old);
    out.push_back(std::move(mb));
  }
  return out;
}

}  // namespace crl::trainer
