#include "common/content_store.h"

#include <unistd.h>

#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/file.h"
#include "common/hash.h"

namespace crl {
namespace {

constexpr char kPrefix[] = "sha256:";
constexpr size_t kPrefixLength = sizeof(kPrefix) - 1;

bool WellFormed(const std::string& address) {
  if (!absl::StartsWith(address, kPrefix) || address.size() != kPrefixLength + 64) return false;
  for (size_t i = kPrefixLength; i < address.size(); ++i) {
    const char c = address[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace

std::string ContentAddress(const std::string& data) { return absl::StrCat(kPrefix, Sha256Hex(data)); }

absl::StatusOr<std::unique_ptr<DiskContentStore>> DiskContentStore::Open(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(dir) / "sha256", ec);
  if (ec) return absl::FailedPreconditionError(absl::StrCat("content store: cannot create ", dir, ": ", ec.message()));
  if (::access(dir.c_str(), W_OK) != 0) {
    return absl::FailedPreconditionError(absl::StrCat("content store: ", dir, " is not writable"));
  }
  return std::unique_ptr<DiskContentStore>(new DiskContentStore(dir));
}

std::string DiskContentStore::PathOf(const std::string& address) const {
  const std::string hex = address.substr(kPrefixLength);
  return absl::StrCat(dir_, "/sha256/", hex.substr(0, 2), "/", hex);
}

absl::StatusOr<std::string> DiskContentStore::Put(const std::string& data) {
  const std::string address = ContentAddress(data);
  const std::string path = PathOf(address);
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) return address;  // same bytes, same name
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::filesystem::create_directories(parent, ec);
  if (ec) return absl::UnavailableError(absl::StrCat("content store: cannot create ", parent.string(), ": ", ec.message()));
  if (absl::Status s = WriteFileDurably(path, data); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("content store: ", s.message()));
  }
  return address;
}

absl::StatusOr<std::string> DiskContentStore::Get(const std::string& address) {
  if (!WellFormed(address)) {
    return absl::InvalidArgumentError(absl::StrCat("content store: '", address, "' is not sha256:<64 lower-case hex>"));
  }
  const std::string path = PathOf(address);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    return absl::NotFoundError(absl::StrCat("content store: nothing kept at ", address, " (", path, " is missing)"));
  }
  auto data = ReadFileToString(path, "content");
  if (!data.ok()) return absl::UnavailableError(absl::StrCat("content store: ", data.status().message()));
  if (const std::string actual = ContentAddress(*data); actual != address) {
    return absl::DataLossError(absl::StrCat("content store: ", path, " no longer holds ", address,
                                            " (its bytes hash to ", actual, ")"));
  }
  return *std::move(data);
}

}  // namespace crl
