// LoRA on chosen projections of a CausalLm, saved and loaded in PEFT's layout
// (adapter_config.json + adapter_model.safetensors, tensors named
// base_model.model.<projection>.lora_A.weight / lora_B.weight) that vLLM's
// runtime LoRA loading and PEFT accept; merged into the base weights on
// request.
#ifndef CRL_LIB_POLICY_LORA_H_
#define CRL_LIB_POLICY_LORA_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "lib/policy/model.h"

namespace crl::policy {

struct LoraConfig {
  int rank = 8;
  double alpha = 16;
  double dropout = 0.0;
  // Projection names (q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj,
  // down_proj) in every layer.
  std::vector<std::string> targets = {"q_proj", "k_proj", "v_proj", "o_proj"};
};

// Attaches fresh factors (the model's output is unchanged until trained).
// INVALID_ARGUMENT for an unknown target or a rank below 1.
absl::Status AttachLora(CausalLm* model, const LoraConfig& config);
// The LoRA factors, by PEFT name.
std::vector<std::pair<std::string, torch::Tensor>> LoraParameters(const CausalLm& model);
// Writes the adapter (float32 factors) into `dir`.
absl::Status SaveLoraAdapter(const CausalLm& model, const LoraConfig& config,
                             const std::string& dir, const std::string& base_model);
// Reads `dir`'s adapter, attaches it and loads its factors; a factor the
// model lacks, or a target it cannot take, is an error naming it.
absl::StatusOr<LoraConfig> LoadLoraAdapter(CausalLm* model, const std::string& dir);
// weight += alpha / rank * B @ A in every projection, factors dropped.
void MergeLora(CausalLm* model);

// The base model for the scope: every attached adapter is bypassed (the
// reference policy of a LoRA run costs no second copy of the weights).
class ScopedLoraBypass {
 public:
  explicit ScopedLoraBypass(CausalLm* model);
  ~ScopedLoraBypass();
  ScopedLoraBypass(const ScopedLoraBypass&) = delete;
  ScopedLoraBypass& operator=(const ScopedLoraBypass&) = delete;

 private:
  CausalLm* model_;
};

}  // namespace crl::policy

#endif  // CRL_LIB_POLICY_LORA_H_
