// LibTorch tensors in and out of safetensors (lib/policy/safetensors.h holds
// the format; this turns views into tensors and tensors into views). One
// place for the dtype mapping, used by model weights, LoRA adapters and
// trainer checkpoints.
#ifndef CRL_LIB_POLICY_TENSOR_IO_H_
#define CRL_LIB_POLICY_TENSOR_IO_H_

#include <torch/torch.h>

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "lib/policy/safetensors.h"

namespace crl::policy {

// The torch dtype of a safetensors dtype; INVALID_ARGUMENT naming `name` for
// one torch cannot hold.
absl::StatusOr<torch::ScalarType> TorchType(DType dtype, const std::string& name);

// A CPU tensor holding a copy of the view's data.
absl::StatusOr<torch::Tensor> ToTorch(const TensorView& view, const std::string& name);

// Collects tensors (copied to contiguous CPU memory, optionally converted)
// and writes them as one safetensors file or a weights directory. Not
// thread-safe.
class TensorWriter {
 public:
  // `as`: the dtype to store (undefined: the tensor's own). INVALID_ARGUMENT
  // for a dtype safetensors has no name for.
  absl::Status Add(const std::string& name, const torch::Tensor& tensor,
           c10::optional<torch::ScalarType> as = c10::nullopt);
  bool empty() const { return tensors_.empty(); }
  absl::Status WriteFile(const std::string& path,
                         const std::map<std::string, std::string>& metadata = {}) const;
  // model.safetensors, or shards with an index (WriteWeights).
  absl::Status WriteDir(const std::string& dir) const;

 private:
  std::vector<torch::Tensor> keep_;  // the memory the views point into
  std::vector<NamedTensor> tensors_;
};

}  // namespace crl::policy

#endif  // CRL_LIB_POLICY_TENSOR_IO_H_
