// Safetensors files (Hugging Face's weight format): read by memory map,
// written atomically, single files and sharded checkpoints
// (model.safetensors.index.json). No LibTorch here: tensors are typed byte
// views; lib/policy/model.h turns them into torch tensors.
//
// Format: u64 little-endian header length N, N bytes of JSON
//   {"<name>": {"dtype": "BF16", "shape": [..], "data_offsets": [begin, end]},
//    "__metadata__": {"format": "pt"}}
// then the data, offsets relative to its start. Headers are untrusted input:
// lengths, offsets and sizes are checked before any byte is used.
#ifndef CRL_LIB_POLICY_SAFETENSORS_H_
#define CRL_LIB_POLICY_SAFETENSORS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace crl::policy {

enum class DType { kF64, kF32, kF16, kBF16, kI64, kI32, kI16, kI8, kU8, kBool };
// "F32", "BF16", ...; false for an unknown name.
bool ParseDType(const std::string& name, DType* dtype);
const char* DTypeName(DType dtype);
size_t DTypeSize(DType dtype);

// A tensor's bytes (little-endian, row-major) with its dtype and shape.
struct TensorView {
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  std::string_view bytes;
  int64_t numel() const;
};

// One .safetensors file, mapped read-only. Thread-safe; views stay valid
// while the file object lives.
class SafetensorsFile {
 public:
  // NOT_FOUND for a missing file; DATA_LOSS naming the file for a malformed
  // one.
  static absl::StatusOr<std::unique_ptr<SafetensorsFile>> Open(const std::string& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::map<std::string, TensorView>& tensors() const { return tensors_; }
  const TensorView* Find(const std::string& name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::string& path() const { return path_; }

 private:
  SafetensorsFile() = default;
  std::string path_;
  void* map_ = nullptr;
  size_t size_ = 0;
  std::map<std::string, TensorView> tensors_;
  std::map<std::string, std::string> metadata_;
};

// A tensor to write: its name and data.
struct NamedTensor {
  std::string name;
  TensorView view;
};

// Writes one file (temporary file, fsync, rename: readers never see a part).
absl::Status WriteSafetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                              const std::map<std::string, std::string>& metadata = {});

// A checkpoint's weights: `dir`/model.safetensors, or the shards listed by
// `dir`/model.safetensors.index.json. Thread-safe.
class WeightStore {
 public:
  static absl::StatusOr<std::unique_ptr<WeightStore>> Open(const std::string& dir);
  // nullptr when absent.
  const TensorView* Find(const std::string& name) const;
  std::vector<std::string> Names() const;

 private:
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, const TensorView*> index_;
};

// Writes `tensors` into `dir` as model.safetensors, or as shards of at most
// `max_shard_bytes` with model.safetensors.index.json when they do not fit
// one.
absl::Status WriteWeights(const std::string& dir, const std::vector<NamedTensor>& tensors,
                          uint64_t max_shard_bytes = uint64_t{5} << 30);

}  // namespace crl::policy

#endif  // CRL_LIB_POLICY_SAFETENSORS_H_
