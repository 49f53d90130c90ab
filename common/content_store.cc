#include "common/content_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/file.h"
#include "common/hash.h"

namespace crl {
namespace {

constexpr char kPrefix[] = "sha256:";

bool WellFormed(const std::string& address) {
  if (!absl::StartsWith(address, kPrefix) || address.size() != 7 + 64) return false;
  for (size_t i = 7; i < address.size(); ++i) {
    const char c = address[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// Writes, flushes to disk and closes; UNAVAILABLE naming the path.
absl::Status WriteDurably(const std::string& path, const std::string& data) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return absl::UnavailableError(absl::StrCat("content store: cannot create ", path, ": ", std::strerror(errno)));
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      return absl::UnavailableError(absl::StrCat("content store: cannot write ", path, ": ", std::strerror(err)));
    }
    done += static_cast<size_t>(n);
  }
  const bool synced = ::fsync(fd) == 0;
  const int err = errno;
  if (::close(fd) != 0 || !synced) {
    return absl::UnavailableError(absl::StrCat("content store: cannot flush ", path, ": ", std::strerror(err)));
  }
  return absl::OkStatus();
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
  const std::string hex = address.substr(7);
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
  static std::atomic<uint64_t> counter{0};
  const std::string tmp = absl::StrCat(path, ".tmp.", ::getpid(), ".", counter++);
  if (absl::Status s = WriteDurably(tmp, data); !s.ok()) {
    std::remove(tmp.c_str());
    return s;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    return absl::UnavailableError(absl::StrCat("content store: cannot rename ", tmp, ": ", std::strerror(err)));
  }
  // The new name is durable once its directory is.
  const int dfd = ::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
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
  if (ContentAddress(*data) != address) {
    return absl::DataLossError(absl::StrCat("content store: ", path, " no longer holds ", address,
                                            " (its bytes hash to ", ContentAddress(*data), ")"));
  }
  return *std::move(data);
}

}  // namespace crl
