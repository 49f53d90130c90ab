#include "lib/policy/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "common/file.h"
#include "common/status.h"

namespace crl::policy {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr uint64_t kMaxHeaderBytes = uint64_t{100} << 20;

struct DTypeInfo {
  DType dtype;
  const char* name;
  size_t size;
};
constexpr DTypeInfo kDTypes[] = {{DType::kF64, "F64", 8},  {DType::kF32, "F32", 4},
                                 {DType::kF16, "F16", 2},  {DType::kBF16, "BF16", 2},
                                 {DType::kI64, "I64", 8},  {DType::kI32, "I32", 4},
                                 {DType::kI16, "I16", 2},  {DType::kI8, "I8", 1},
                                 {DType::kU8, "U8", 1},    {DType::kBool, "BOOL", 1}};

absl::Status Corrupt(const std::string& path, const std::string& why) {
  return absl::DataLossError(absl::StrCat(path, ": not a valid safetensors file: ", why));
}

// Writes all of `data` to `fd`.
bool WriteAll(int fd, const char* data, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

}  // namespace

bool ParseDType(const std::string& name, DType* dtype) {
  for (const auto& d : kDTypes) {
    if (name == d.name) {
      *dtype = d.dtype;
      return true;
    }
  }
  return false;
}

const char* DTypeName(DType dtype) { return kDTypes[static_cast<int>(dtype)].name; }
size_t DTypeSize(DType dtype) { return kDTypes[static_cast<int>(dtype)].size; }

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

SafetensorsFile::~SafetensorsFile() {
  if (map_) munmap(map_, size_);
}

absl::StatusOr<std::unique_ptr<SafetensorsFile>> SafetensorsFile::Open(const std::string& path) {
  std::unique_ptr<SafetensorsFile> f(new SafetensorsFile());
  f->path_ = path;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::NotFoundError(absl::StrCat("cannot open weights ", path));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    ::close(fd);
    return absl::NotFoundError(absl::StrCat("cannot stat weights ", path));
  }
  f->size_ = static_cast<size_t>(st.st_size);
  if (f->size_ < 8) {
    ::close(fd);
    return Corrupt(path, "shorter than its 8-byte header length");
  }
  f->map_ = mmap(nullptr, f->size_, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (f->map_ == MAP_FAILED) {
    f->map_ = nullptr;
    return absl::UnavailableError(absl::StrCat("cannot map weights ", path));
  }
  const char* base = static_cast<const char*>(f->map_);
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | static_cast<uint8_t>(base[i]);
  if (header_len > kMaxHeaderBytes || header_len > f->size_ - 8) {
    return Corrupt(path, absl::StrCat("header length ", header_len, " does not fit the file"));
  }
  json header = json::parse(base + 8, base + 8 + header_len, nullptr, /*allow_exceptions=*/false);
  if (!header.is_object()) return Corrupt(path, "the header is not a JSON object");
  const char* data = base + 8 + header_len;
  const uint64_t data_size = f->size_ - 8 - header_len;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it->is_object()) return Corrupt(path, "__metadata__ is not an object");
      for (auto m = it->begin(); m != it->end(); ++m) {
        if (m->is_string()) f->metadata_[m.key()] = m->get<std::string>();
      }
      continue;
    }
    const json& t = it.value();
    const std::string where = absl::StrCat("tensor '", it.key(), "': ");
    if (!t.is_object() || !t.contains("dtype") || !t.contains("shape") ||
        !t.contains("data_offsets") || !t["dtype"].is_string() || !t["shape"].is_array() ||
        !t["data_offsets"].is_array() || t["data_offsets"].size() != 2) {
      return Corrupt(path, where + "needs dtype, shape and data_offsets");
    }
    TensorView v;
    if (!ParseDType(t["dtype"].get<std::string>(), &v.dtype)) {
      return Corrupt(path, where + "unknown dtype " + t["dtype"].get<std::string>());
    }
    uint64_t numel = 1;
    for (const auto& d : t["shape"]) {
      if (!d.is_number_unsigned() || d.get<uint64_t>() > (uint64_t{1} << 40)) {
        return Corrupt(path, where + "bad dimension");
      }
      v.shape.push_back(d.get<int64_t>());
      numel *= d.get<uint64_t>();
      if (numel > (uint64_t{1} << 40)) return Corrupt(path, where + "too many elements");
    }
    const auto& off = t["data_offsets"];
    if (!off[0].is_number_unsigned() || !off[1].is_number_unsigned()) {
      return Corrupt(path, where + "data_offsets must be non-negative integers");
    }
    const uint64_t begin = off[0].get<uint64_t>(), end = off[1].get<uint64_t>();
    if (begin > end || end > data_size || end - begin != numel * DTypeSize(v.dtype)) {
      return Corrupt(path, absl::StrCat(where, "data_offsets [", begin, ", ", end,
                                        ") do not hold its ", numel, " elements"));
    }
    v.bytes = std::string_view(data + begin, end - begin);
    f->tensors_.emplace(it.key(), std::move(v));
  }
  return f;
}

const TensorView* SafetensorsFile::Find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

absl::Status WriteSafetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                              const std::map<std::string, std::string>& metadata) {
  json header = json::object();
  json meta = {{"format", "pt"}};
  for (const auto& [k, v] : metadata) meta[k] = v;
  header["__metadata__"] = meta;
  uint64_t offset = 0;
  for (const NamedTensor& t : tensors) {
    if (static_cast<uint64_t>(t.view.numel()) * DTypeSize(t.view.dtype) != t.view.bytes.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor '", t.name, "': ", t.view.bytes.size(),
                       " bytes do not match its shape and dtype"));
    }
    header[t.name] = {{"dtype", DTypeName(t.view.dtype)},
                      {"shape", t.view.shape},
                      {"data_offsets", {offset, offset + t.view.bytes.size()}}};
    offset += t.view.bytes.size();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // aligned data, as the reference writer does
  static std::atomic<uint64_t> counter{0};
  const std::string tmp = absl::StrCat(path, ".tmp.", getpid(), ".", counter++);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return absl::UnavailableError(absl::StrCat("cannot write ", tmp));
  char len[8];
  const uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) len[i] = static_cast<char>((n >> (8 * i)) & 0xFF);
  bool ok = WriteAll(fd, len, 8) && WriteAll(fd, text.data(), text.size());
  for (const NamedTensor& t : tensors) ok = ok && WriteAll(fd, t.view.bytes.data(), t.view.bytes.size());
  ok = ok && ::fsync(fd) == 0;
  ok = ::close(fd) == 0 && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return absl::UnavailableError(absl::StrCat("cannot write ", path));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<WeightStore>> WeightStore::Open(const std::string& dir) {
  auto store = std::make_unique<WeightStore>();
  const fs::path single = fs::path(dir) / "model.safetensors";
  const fs::path index = fs::path(dir) / "model.safetensors.index.json";
  std::vector<std::string> files;
  std::map<std::string, std::string> shard_of;
  if (fs::exists(index)) {
    CRL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(index.string(), "weight index"));
    json j = json::parse(text, nullptr, false);
    if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object()) {
      return absl::DataLossError(absl::StrCat(index.string(), ": no weight_map object"));
    }
    for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
      if (!it->is_string() || it->get<std::string>().find('/') != std::string::npos) {
        return absl::DataLossError(absl::StrCat(index.string(), ": weight_map['", it.key(),
                                                "'] is not a file name in ", dir));
      }
      shard_of[it.key()] = it->get<std::string>();
      if (std::find(files.begin(), files.end(), it->get<std::string>()) == files.end()) {
        files.push_back(it->get<std::string>());
      }
    }
  } else if (fs::exists(single)) {
    files.push_back("model.safetensors");
  } else {
    return absl::NotFoundError(
        absl::StrCat("no model.safetensors or model.safetensors.index.json in ", dir));
  }
  for (const std::string& name : files) {
    CRL_ASSIGN_OR_RETURN(auto f, SafetensorsFile::Open((fs::path(dir) / name).string()));
    for (const auto& [tensor, view] : f->tensors()) {
      if (!shard_of.empty()) {
        auto want = shard_of.find(tensor);
        if (want == shard_of.end() || want->second != name) continue;  // listed elsewhere
      }
      store->index_[tensor] = &view;
    }
    store->files_.push_back(std::move(f));
  }
  for (const auto& [tensor, file] : shard_of) {
    if (!store->index_.count(tensor)) {
      return absl::DataLossError(
          absl::StrCat(index.string(), ": tensor '", tensor, "' is not in ", file));
    }
  }
  return store;
}

const TensorView* WeightStore::Find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : it->second;
}

std::vector<std::string> WeightStore::Names() const {
  std::vector<std::string> names;
  for (const auto& [name, view] : index_) names.push_back(name);
  return names;
}

absl::Status WriteWeights(const std::string& dir, const std::vector<NamedTensor>& tensors,
                          uint64_t max_shard_bytes) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  uint64_t total = 0;
  for (const auto& t : tensors) total += t.view.bytes.size();
  // One layout per directory: a stale index would shadow a new single file
  // (and a stale single file is dead weight next to a new index).
  const fs::path single = fs::path(dir) / "model.safetensors";
  const fs::path index_path = fs::path(dir) / "model.safetensors.index.json";
  if (total <= max_shard_bytes) {
    CRL_RETURN_IF_ERROR(WriteSafetensors(single.string(), tensors));
    fs::remove(index_path, ec);
    return absl::OkStatus();
  }
  std::vector<std::vector<NamedTensor>> shards(1);
  uint64_t in_shard = 0;
  for (const auto& t : tensors) {
    if (in_shard > 0 && in_shard + t.view.bytes.size() > max_shard_bytes) {
      shards.emplace_back();
      in_shard = 0;
    }
    shards.back().push_back(t);
    in_shard += t.view.bytes.size();
  }
  json map = json::object();
  for (size_t s = 0; s < shards.size(); ++s) {
    char name[64];
    std::snprintf(name, sizeof(name), "model-%05zu-of-%05zu.safetensors", s + 1, shards.size());
    CRL_RETURN_IF_ERROR(WriteSafetensors((fs::path(dir) / name).string(), shards[s]));
    for (const auto& t : shards[s]) map[t.name] = name;
  }
  json index = {{"metadata", {{"total_size", total}}}, {"weight_map", map}};
  CRL_RETURN_IF_ERROR(WriteFileAtomically(index_path.string(), index.dump(2) + "\n"));
  fs::remove(single, ec);
  return absl::OkStatus();
}

}  // namespace crl::policy
