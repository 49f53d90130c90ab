// Where a policy runs and how it is read from disk, in one place for the CLI,
// the trainer and the sampler: device and dtype from user text, and a model
// directory with an optional PEFT adapter (the tokenizer beside the weights:
// LoadTokenizer in tokenizer.h).
#ifndef CRL_LIB_POLICY_LOADER_H_
#define CRL_LIB_POLICY_LOADER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "lib/policy/model.h"

namespace crl::policy {

struct Placement {
  torch::Device device = torch::kCPU;
  torch::ScalarType dtype = torch::kFloat32;
};

// device: "auto" (CUDA when present), "cpu", "cuda", "cuda:N"; dtype:
// "auto" (bfloat16 on CUDA, float32 on CPU), "float32", "bfloat16".
// INVALID_ARGUMENT naming the field; FAILED_PRECONDITION for CUDA without one.
absl::StatusOr<Placement> ResolvePlacement(const std::string& device, const std::string& dtype);

// `dir`'s model, with `adapter_dir`'s LoRA adapter attached when not empty.
absl::StatusOr<std::unique_ptr<CausalLm>> LoadPolicy(const std::string& dir,
                                                     const std::string& adapter_dir,
                                                     const Placement& placement);

}  // namespace crl::policy

#endif  // CRL_LIB_POLICY_LOADER_H_
