#include "services/worker/formats/task_files.h"

#include "services/worker/compile/disk_budget.h"

#include <unistd.h>

#include <atomic>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/file.h"
#include "common/hash.h"

namespace crl {
namespace {

namespace fs = std::filesystem;

// Bundle file names may not escape the bundle directory.
bool SafeRelativePath(const std::string& p) {
  if (p.empty() || p[0] == '/' || p.size() > 255) return false;
  for (const auto& part : fs::path(p)) {
    if (part == ".." || part == ".") return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<std::string> ResolveTaskPath(const std::string& task_root, const std::string& path) {
  fs::path p = path;
  if (task_root.empty()) return p.string();
  if (p.is_relative()) p = fs::path(task_root) / p;
  std::error_code ec;
  fs::path canon = fs::weakly_canonical(p, ec);
  fs::path root = fs::weakly_canonical(task_root, ec);
  auto rel = canon.lexically_relative(root);
  if (rel.empty() || *rel.begin() == "..") {
    return absl::InvalidArgumentError(
        absl::StrCat("task.path: '", path, "' is outside the task root"));
  }
  return canon.string();
}

absl::StatusOr<std::string> UnpackBundle(const v1::Task& task, const std::string& dir, DiskBudget* budget) {
  std::string key;
  for (const v1::File& f : task.files()) {
    if (!SafeRelativePath(f.path())) {
      return absl::InvalidArgumentError(
          absl::StrCat("task.files: bad path '", f.path(), "' (relative, no '..')"));
    }
    absl::StrAppend(&key, f.path().size(), ":", f.path(), f.content().size(), ":", f.content());
  }
  const fs::path target = fs::path(dir) / Sha256Hex(key);
  if (fs::exists(target / ".complete")) {
    if (budget) budget->Touch(target.string());
    return target.string();
  }
  static std::atomic<uint64_t> counter{0};
  const fs::path tmp = absl::StrCat(target.string(), ".tmp", getpid(), ".", counter++);
  std::error_code ec;
  fs::create_directories(tmp, ec);
  for (const v1::File& f : task.files()) {
    fs::create_directories((tmp / f.path()).parent_path(), ec);
    if (absl::Status s = WriteStringToFile((tmp / f.path()).string(), f.content()); !s.ok()) {
      fs::remove_all(tmp, ec);
      return absl::InternalError(absl::StrCat("cannot unpack task into ", tmp.string()));
    }
  }
  (void)WriteStringToFile((tmp / ".complete").string(), "");
  fs::rename(tmp, target, ec);
  if (ec) fs::remove_all(tmp, ec);  // another request unpacked it first
  if (budget) budget->Added(target.string());
  return target.string();
}

}  // namespace crl
