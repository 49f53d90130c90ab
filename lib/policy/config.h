// A decoder-only transformer's shape, read from a Hugging Face config.json
// (Llama 3, Qwen2 / 2.5, Qwen3, Mistral) and written back in the same form, so
// checkpoints go in and out of crl in the layout the field uses.
#ifndef CRL_LIB_POLICY_CONFIG_H_
#define CRL_LIB_POLICY_CONFIG_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace crl::policy {

// The families differ in biases, norms and attention windows:
//   llama    no biases
//   qwen2    q/k/v projections have biases (Qwen2 and Qwen2.5)
//   qwen3    RMSNorm on each head of q and k before RoPE; no biases
//   mistral  Llama's layers with a sliding attention window
enum class Family { kLlama, kQwen2, kQwen3, kMistral };
const char* FamilyName(Family family);  // "llama", "qwen2", "qwen3", "mistral"

// RoPE frequency scaling (config "rope_scaling").
struct RopeScaling {
  // "none", "linear" or "llama3" (Llama 3.1's wavelength-dependent scaling).
  std::string type = "none";
  double factor = 1.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int original_max_position_embeddings = 8192;
};

struct ModelConfig {
  Family family = Family::kLlama;
  int vocab_size = 0;
  int hidden_size = 0;
  int intermediate_size = 0;
  int num_hidden_layers = 0;
  int num_attention_heads = 0;
  int num_key_value_heads = 0;  // grouped-query attention when < heads
  int head_dim = 0;             // default hidden_size / heads
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  int max_position_embeddings = 4096;
  bool tie_word_embeddings = false;
  bool attention_bias = false;  // q/k/v biases (qwen2: always)
  bool qk_norm = false;         // per-head RMSNorm of q and k (qwen3)
  int sliding_window = 0;       // 0: full attention (mistral may set one)
  int bos_token_id = -1;
  std::vector<int> eos_token_ids;
  // "float32" or "bfloat16": the dtype the weights are stored in.
  std::string torch_dtype = "bfloat16";

  // Parameters of the full model (embeddings counted once when tied).
  int64_t ParameterCount() const;
};

// Parses config.json text. Unsupported model types, rope scaling types and
// inconsistent shapes are INVALID_ARGUMENT naming `source` and the field.
absl::StatusOr<ModelConfig> ParseModelConfig(const std::string& json_text,
                                             const std::string& source);
absl::StatusOr<ModelConfig> LoadModelConfig(const std::string& path);

// The config.json text of `config` (Hugging Face field names, the
// architectures entry of its family).
std::string ModelConfigJson(const ModelConfig& config);

}  // namespace crl::policy

#endif  // CRL_LIB_POLICY_CONFIG_H_
