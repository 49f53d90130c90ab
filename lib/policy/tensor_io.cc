#include "lib/policy/tensor_io.h"

#include "absl/strings/str_cat.h"

namespace crl::policy {

absl::StatusOr<torch::ScalarType> TorchType(DType d, const std::string& name) {
  switch (d) {
    case DType::kF64: return torch::kFloat64;
    case DType::kF32: return torch::kFloat32;
    case DType::kF16: return torch::kFloat16;
    case DType::kBF16: return torch::kBFloat16;
    case DType::kI64: return torch::kInt64;
    case DType::kI32: return torch::kInt32;
    case DType::kI16: return torch::kInt16;
    case DType::kI8: return torch::kInt8;
    case DType::kU8: return torch::kUInt8;
    case DType::kBool: return torch::kBool;
  }
  return absl::InvalidArgumentError(absl::StrCat("tensor '", name, "': unsupported dtype"));
}

namespace {

absl::StatusOr<DType> FileType(torch::ScalarType t, const std::string& name) {
  switch (t) {
    case torch::kFloat64: return DType::kF64;
    case torch::kFloat32: return DType::kF32;
    case torch::kFloat16: return DType::kF16;
    case torch::kBFloat16: return DType::kBF16;
    case torch::kInt64: return DType::kI64;
    case torch::kInt32: return DType::kI32;
    case torch::kInt16: return DType::kI16;
    case torch::kInt8: return DType::kI8;
    case torch::kUInt8: return DType::kU8;
    case torch::kBool: return DType::kBool;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("tensor '", name, "': dtype ", c10::toString(t), " has no safetensors name"));
  }
}

}  // namespace

absl::StatusOr<torch::Tensor> ToTorch(const TensorView& view, const std::string& name) {
  auto type = TorchType(view.dtype, name);
  if (!type.ok()) return type.status();
  return torch::from_blob(const_cast<char*>(view.bytes.data()), view.shape,
                          torch::TensorOptions().dtype(*type))
      .clone();
}

absl::Status TensorWriter::Add(const std::string& name, const torch::Tensor& tensor,
                               c10::optional<torch::ScalarType> as) {
  torch::Tensor t = tensor.detach().to(torch::kCPU, as.value_or(tensor.scalar_type())).contiguous();
  auto dtype = FileType(t.scalar_type(), name);
  if (!dtype.ok()) return dtype.status();
  keep_.push_back(t);
  TensorView v;
  v.dtype = *dtype;
  v.shape = t.sizes().vec();
  v.bytes = std::string_view(static_cast<const char*>(t.data_ptr()), t.nbytes());
  tensors_.push_back({name, std::move(v)});
  return absl::OkStatus();
}

absl::Status TensorWriter::WriteFile(const std::string& path,
                                     const std::map<std::string, std::string>& metadata) const {
  return WriteSafetensors(path, tensors_, metadata);
}

absl::Status TensorWriter::WriteDir(const std::string& dir) const {
  return WriteWeights(dir, tensors_);
}

}  // namespace crl::policy
