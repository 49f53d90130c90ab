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

// Loads one policy's versions in turn, as a sampler serving a run does. It
// keeps the last base model it read: a LoRA version on that base attaches its
// adapter to a model sharing the base's weights (ShareWeights) instead of
// reading the base again, so a version costs its adapter's bytes. The base is
// known by its directory and read once: a directory whose weights change in
// place is not noticed. Not thread-safe.
class PolicyLoader {
 public:
  explicit PolicyLoader(Placement placement) : placement_(placement) {}

  // LoadPolicy(dir, adapter_dir, placement), sharing the kept base when
  // adapter_dir is set and dir is the kept base's; a model loaded without an
  // adapter becomes the kept base. Each returned model's adapter is its own.
  absl::StatusOr<std::shared_ptr<CausalLm>> Load(const std::string& dir, const std::string& adapter_dir);

  // Bases read from disk so far (a LoRA version on the kept base adds none).
  int base_loads() const { return base_loads_; }

 private:
  Placement placement_;
  std::string base_dir_;
  std::shared_ptr<CausalLm> base_;
  int base_loads_ = 0;
};

}  // namespace crl::policy

#endif  // CRL_LIB_POLICY_LOADER_H_
