// The policy: a decoder-only transformer of the Llama family in LibTorch,
// configured from a Hugging Face config.json (config.h) and loaded from and
// saved to safetensors in Hugging Face's names, so checkpoints move between
// crl, vLLM and the Python ecosystem unchanged. RMSNorm, RoPE (with linear
// and Llama 3 scaling), grouped-query attention, SwiGLU, tied or untied
// embeddings; Qwen2's q/k/v biases, Qwen3's q/k norms, Mistral's sliding
// window. fp32 and bf16; scaled-dot-product attention on LibTorch 2, a plain
// path on 1.13 (Debian's). LoRA (lora.h) wraps the projections in place.
//
// Parameter names are Hugging Face's: model.embed_tokens.weight,
// model.layers.N.self_attn.q_proj.weight, ..., model.norm.weight,
// lm_head.weight (absent when tied).
#ifndef CRL_LIB_POLICY_MODEL_H_
#define CRL_LIB_POLICY_MODEL_H_

#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "lib/policy/config.h"

namespace crl::policy {

// A linear projection that LoRA can be attached to. Weight [out, in]; LoRA
// adds scale * B(A(dropout(x))) with A [rank, in], B [out, rank] registered
// as lora_A / lora_B (PEFT's names).
class ProjectionImpl : public torch::nn::Module {
 public:
  ProjectionImpl(int64_t in, int64_t out, bool bias);
  torch::Tensor forward(const torch::Tensor& x);
  // Attaches fresh LoRA factors (A Kaiming-uniform, B zero: the output is
  // unchanged until trained).
  void AttachLora(int rank, double alpha, double dropout);
  bool has_lora() const { return !lora_a_.is_empty(); }
  // weight += scale * B @ A, then drops the factors.
  void MergeLora();

  torch::Tensor weight, bias;
  torch::nn::Linear lora_a_{nullptr}, lora_b_{nullptr};
  double lora_scale = 0;
  double lora_dropout = 0;
  // False: the base projection alone (the reference policy of LoRA training).
  bool lora_enabled = true;
};
TORCH_MODULE(Projection);

// Keys and values of every layer for the tokens seen so far. With a
// capacity, each layer's [B, kv_heads, capacity, head_dim] buffers are
// allocated once and filled in place (generation); without, they grow by
// concatenation.
//
// Slot mode (a generation engine's cache, GenerationEngine): every row has a
// length of its own. keys/values are preallocated [slots, kv_heads,
// capacity, head_dim]; a call covers rows first_row .. first_row + B, row
// b's T new tokens are written at row_lengths[b] + t and attend to columns
// up to that position; `view` columns are read (at least the longest row
// after the call). The caller advances row_lengths.
//
// Slot-list prefill (`slots` defined, [B] int64): row b's tokens are new
// sequences written to slot slots[b] from position 0, and attend to this
// call's earlier tokens of their row only (row_lengths and view unused);
// right padding is harmless (causal attention never looks right, and later
// tokens overwrite the padding's positions).
struct KvCache {
  std::vector<torch::Tensor> keys;
  std::vector<torch::Tensor> values;
  int64_t length = 0;    // tokens cached
  int64_t capacity = 0;  // 0: grow as needed
  torch::Tensor row_lengths;  // [B] int64 on the model's device: slot mode
  int64_t first_row = 0;
  int64_t view = 0;
  torch::Tensor slots;  // [B] int64 on the model's device: slot-list prefill
  // Slot mode, set by the forward pass for its layers: [B, T] row and
  // position of each new token's keys and values.
  torch::Tensor write_rows, write_positions;
};

// What a forward pass sees beyond the token ids.
struct ForwardOptions {
  // [B, S] (S = cached + T): 1 for a real token, 0 for padding; positions
  // count real tokens only. Undefined: every token is real. Right padding
  // needs no mask (causal attention never looks right).
  torch::Tensor attention_mask;
  // [B, T] int64, for packed rows: a token attends only to earlier tokens of
  // its own segment, and positions restart at each segment. 0 is padding.
  // Not with a cache or an attention mask.
  torch::Tensor segment_ids;
  // Keys and values of earlier tokens; this call's are appended.
  KvCache* cache = nullptr;
  // Activation checkpointing: keep only each layer's input and recompute
  // the layer in the backward pass (memory for time). Training only; not
  // with LoRA dropout (its random mask would differ when recomputed).
  bool checkpoint_layers = false;
};

class CausalLmImpl;

class CausalLm {
 public:
  // Random initialisation (normal(0, 0.02) projections and embeddings, unit
  // norms), reproducible for a seed.
  static absl::StatusOr<std::unique_ptr<CausalLm>> Init(const ModelConfig& config, uint64_t seed,
                                                        torch::Device device,
                                                        torch::ScalarType dtype);
  // Loads `dir`/config.json and its safetensors. A tensor the model lacks,
  // or one it needs that the files lack, is an error naming the tensor.
  static absl::StatusOr<std::unique_ptr<CausalLm>> Load(const std::string& dir,
                                                        torch::Device device,
                                                        torch::ScalarType dtype);
  // A model whose base weights are `base`'s own tensors (shared, not
  // copied; `base`'s LoRA factors are not carried): adapters attached to it
  // leave `base` as it was. Whoever changes a base weight in place (MergeLora,
  // an optimizer step) changes it for both.
  static std::unique_ptr<CausalLm> ShareWeights(const CausalLm& base);
  ~CausalLm();

  // Writes config.json and model.safetensors (in the config's torch_dtype),
  // base weights only (LoRA factors: SaveLoraAdapter).
  absl::Status Save(const std::string& dir) const;

  // Logits [B, T, vocab] (float32) of `ids` [B, T]. `attention_mask` [B, S]
  // (S = cached + T; 1 = real token, 0 = padding) may be undefined (all
  // real); positions follow from it. With `cache`, keys and values are
  // appended to it and earlier ones attended to.
  torch::Tensor Forward(const torch::Tensor& ids, const torch::Tensor& attention_mask = {},
                        KvCache* cache = nullptr);
  // Logits (float32) of final hidden states [..., hidden] (Hidden's output).
  torch::Tensor Logits(const torch::Tensor& hidden);

  // The final (normed) hidden states [B, T, hidden]: what Forward applies
  // the output embedding to. The trainer's entry, which applies it in chunks
  // (TokenLogprobsFromHidden in objective code) instead of materialising
  // [B, T, vocab] logits.
  torch::Tensor Hidden(const torch::Tensor& ids, const ForwardOptions& options);
  // The output embedding [vocab, hidden]: lm_head, or the input embedding
  // when tied.
  torch::Tensor OutputEmbedding() const;

  const ModelConfig& config() const;
  torch::nn::Module& module();
  torch::Device device() const;
  torch::ScalarType dtype() const;
  // Parameters by Hugging Face name (LoRA factors included when attached).
  std::vector<std::pair<std::string, torch::Tensor>> NamedParameters() const;

  // The projections LoRA may target: q_proj, k_proj, v_proj, o_proj,
  // gate_proj, up_proj, down_proj; by full name.
  std::vector<std::pair<std::string, Projection>> Projections() const;

 private:
  explicit CausalLm(std::shared_ptr<CausalLmImpl> impl);
  std::shared_ptr<CausalLmImpl> impl_;
};

// bf16 autocast on CUDA for the scope (matmuls in bfloat16 over float32
// master weights, as torch.autocast does); nothing on CPU or when `enable`
// is false. Thread-local, as autocast is.
class AutocastGuard {
 public:
  AutocastGuard(bool enable, torch::Device device);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;
  // Whether CUDA autocast is on in this thread.
  static bool Enabled();

 private:
  bool active_ = false;
  bool previous_ = false;
};

// "float32" / "bfloat16" / "float16" as a dtype; false if unknown.
bool ParseScalarType(const std::string& name, torch::ScalarType* dtype);

}  // namespace crl::policy

#endif  // CRL_LIB_POLICY_MODEL_H_
