#include "lib/policy/loader.h"

#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "lib/policy/lora.h"

namespace crl::policy {

namespace fs = std::filesystem;

absl::StatusOr<Placement> ResolvePlacement(const std::string& device, const std::string& dtype) {
  Placement p;
  const bool cuda_present = torch::cuda::is_available();
  if (device == "auto") {
    p.device = cuda_present ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU);
  } else if (device == "cpu") {
    p.device = torch::kCPU;
  } else if (device == "cuda" || absl::StartsWith(device, "cuda:")) {
    int index = 0;
    if (device.size() > 5 && !absl::SimpleAtoi(device.substr(5), &index)) {
      return absl::InvalidArgumentError(absl::StrCat("device: '", device, "' is not cuda:N"));
    }
    if (!cuda_present || index >= static_cast<int>(torch::cuda::device_count())) {
      return absl::FailedPreconditionError(
          absl::StrCat("device: ", device, " is not available (", torch::cuda::device_count(),
                       " CUDA devices visible to LibTorch)"));
    }
    p.device = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(index));
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("device: '", device, "' is not auto, cpu, cuda or cuda:N"));
  }
  if (dtype == "auto") {
    p.dtype = p.device.is_cuda() ? torch::kBFloat16 : torch::kFloat32;
  } else if (dtype == "float16" || !ParseScalarType(dtype, &p.dtype)) {
    return absl::InvalidArgumentError(
        absl::StrCat("dtype: '", dtype, "' is not auto, float32 or bfloat16"));
  }
  return p;
}

absl::StatusOr<std::unique_ptr<CausalLm>> LoadPolicy(const std::string& dir,
                                                     const std::string& adapter_dir,
                                                     const Placement& placement) {
  CRL_ASSIGN_OR_RETURN(auto model, CausalLm::Load(dir, placement.device, placement.dtype));
  if (!adapter_dir.empty()) {
    CRL_RETURN_IF_ERROR(LoadLoraAdapter(model.get(), adapter_dir).status());
  }
  return model;
}

absl::StatusOr<std::shared_ptr<CausalLm>> PolicyLoader::Load(const std::string& dir,
                                                               const std::string& adapter_dir) {
  if (!base_ || base_dir_ != dir) {
    CRL_ASSIGN_OR_RETURN(auto base, CausalLm::Load(dir, placement_.device, placement_.dtype));
    base_ = std::move(base);
    base_dir_ = dir;
    ++base_loads_;
  }
  if (adapter_dir.empty()) return base_;
  std::shared_ptr<CausalLm> model = CausalLm::ShareWeights(*base_);
  CRL_RETURN_IF_ERROR(LoadLoraAdapter(model.get(), adapter_dir).status());
  return model;
}

}  // namespace crl::policy
