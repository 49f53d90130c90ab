#include "services/trainer/checkpoint_dirs.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/file.h"
#include "common/status.h"

namespace crl::trainer {
namespace {

namespace fs = std::filesystem;

// fsync every regular file under `dir`, then `dir` itself.
void SyncTree(const fs::path& dir) {
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(dir, ec)) {
    if (!e.is_regular_file()) continue;
    const int fd = ::open(e.path().c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      ::fsync(fd);
      ::close(fd);
    }
  }
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

}  // namespace

std::string StagingDirectory(const std::string& parent, const std::string& prefix, int64_t number) {
  return (fs::path(parent) / absl::StrCat(".staging-", prefix, number)).string();
}

absl::StatusOr<std::string> CommitDirectory(const std::string& parent, const std::string& prefix,
                                            int64_t number, int keep) {
  const fs::path staging = StagingDirectory(parent, prefix, number);
  const fs::path final_path = fs::path(parent) / absl::StrCat(prefix, number);
  std::error_code ec;
  if (!fs::is_directory(staging, ec)) {
    return absl::FailedPreconditionError(absl::StrCat("nothing staged at ", staging.string()));
  }
  SyncTree(staging);
  fs::remove_all(final_path, ec);  // a re-commit of the same number replaces it
  fs::rename(staging, final_path, ec);
  if (ec) {
    return absl::UnavailableError(
        absl::StrCat("cannot move ", staging.string(), " to ", final_path.string(), ": ", ec.message()));
  }
  SyncTree(parent);
  CRL_RETURN_IF_ERROR(WriteFileAtomically((fs::path(parent) / "latest").string(),
                                          final_path.filename().string() + "\n"));
  // Prune: other committed numbers of this prefix, and stale staging dirs.
  std::vector<std::pair<int64_t, fs::path>> committed;
  for (const auto& e : fs::directory_iterator(parent, ec)) {
    const std::string name = e.path().filename().string();
    if (absl::StartsWith(name, ".staging-")) {
      if (e.path() != staging) fs::remove_all(e.path(), ec);
      continue;
    }
    absl::string_view rest = name;
    int64_t n;
    if (e.is_directory() && absl::ConsumePrefix(&rest, prefix) && absl::SimpleAtoi(rest, &n)) {
      committed.emplace_back(n, e.path());
    }
  }
  if (keep > 0 && static_cast<int>(committed.size()) > keep) {
    std::sort(committed.begin(), committed.end());
    for (size_t i = 0; i + keep < committed.size(); ++i) {
      if (committed[i].second != final_path) fs::remove_all(committed[i].second, ec);
    }
  }
  return final_path.string();
}

absl::StatusOr<std::string> LatestDirectory(const std::string& parent) {
  auto name = ReadFileToString((fs::path(parent) / "latest").string(), "latest marker");
  if (!name.ok()) return absl::NotFoundError(absl::StrCat("no checkpoint under ", parent));
  std::string n(absl::StripAsciiWhitespace(*name));
  const fs::path dir = fs::path(parent) / n;
  std::error_code ec;
  if (n.empty() || n.find('/') != std::string::npos || !fs::is_directory(dir, ec)) {
    return absl::DataLossError(absl::StrCat(parent, "/latest names '", n, "', which is not there"));
  }
  return dir.string();
}

}  // namespace crl::trainer
