// A GenerationEngine's decode steps replayed from CUDA graphs. A decode step
// of a small model is bound by the host, not the GPU: ~1,000 ATen calls of
// ~20 us each (docs/benchmarks.md, "Policy generation"), whatever the batch.
// Captured once into a CUDA graph, the same step (the forward pass and the
// sampling of the next tokens) is one launch, one copy in and one copy out.
//
// A graph has fixed shapes and addresses, so steps are bucketed: the rows
// are padded up to a power of two (at most max_batch) and the columns of
// the KV cache a step reads up to a power of two of at least 256 (at most
// max_len); token ids, row lengths and the rows' sampling parameters are
// copied into static buffers before each replay; steps with and without
// top-k/top-p filtering, and with and without top tokens for some row's
// top_logprobs (always kMaxTopLogprobs of them, so one graph serves any
// request's count), have graphs of their own. Padding rows decode
// token 0 at position 0 of a free slot (as the engine's free slots below
// its highest busy one always did); columns beyond a row's length are
// masked, so the padding changes no real row's result beyond float
// rounding. Graphs are captured lazily, at most 4 x log2(max_batch) x
// log2(max_len / 256) of them, in one memory pool.
//
// Steps that must not use graphs, or builds without them, go through the
// same buckets eagerly (`capture` false): what the CPU unit test exercises.
//
// Not thread-safe: the engine's thread owns it. A graph reads the model's
// weights at the addresses they had when it was captured: the engine's model
// is never updated in place (a new policy version gets a new engine), and
// switching a LoRA adapter on or off after the first step is not seen.
#ifndef CRL_LIB_POLICY_DECODE_GRAPHS_H_
#define CRL_LIB_POLICY_DECODE_GRAPHS_H_

#include <torch/torch.h>

#include <memory>
#include <vector>

#include "lib/policy/model.h"
#include "lib/policy/sampling.h"

namespace crl::policy {

class DecodeGraphs {
 public:
  // Whether this build captures CUDA graphs (a LibTorch with CUDA).
  static bool Available();

  // `cache` is the engine's slot-mode cache ([max_batch, kv_heads, max_len,
  // head_dim] per layer); `model` and `cache` outlive this object.
  // `capture` false (or no CUDA graphs in this build, or a CPU model): the
  // bucketed step runs eagerly.
  DecodeGraphs(CausalLm* model, KvCache* cache, int max_batch, int64_t max_len, bool capture);
  ~DecodeGraphs();

  // One decode step and its sampling (sampling.h), on the host: row i (slot
  // i) reads token ids[i] at position lengths[i], attends to its columns up
  // to that one and samples with rows' row i; `view` >= every length + 1.
  // Throws what LibTorch throws.
  Sampled Step(const std::vector<int64_t>& ids, const std::vector<int64_t>& lengths, int64_t view,
               const HostRowSampling& rows);

  // Graphs captured so far.
  int graphs() const;
  bool capturing() const;

  // The buckets (public for the unit test).
  static int RowBucket(int rows, int max_batch);
  static int64_t ViewBucket(int64_t view, int64_t max_len);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace crl::policy

#endif  // CRL_LIB_POLICY_DECODE_GRAPHS_H_
