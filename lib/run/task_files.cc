#include "lib/run/task_files.h"

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <vector>

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "common/file.h"
#include "common/status.h"
#include "lib/run/run_spec.h"

namespace crl::run {
namespace {

namespace fs = std::filesystem;

// The task as an inline bundle (task.yaml and top-level sources), for a
// worker that does not share our file system.
absl::StatusOr<v1::Task> BundleTask(const std::string& dir) {
  v1::Task task;
  task.set_format(v1::TASK_FORMAT_NATIVE);
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (!entry.is_regular_file()) continue;
    CRL_ASSIGN_OR_RETURN(std::string content, ReadFileToString(entry.path().string(), "task file"));
    v1::File* f = task.add_files();
    f->set_path(entry.path().filename().string());
    f->set_content(std::move(content));
  }
  if (ec) return absl::NotFoundError(absl::StrCat("task directory ", dir, ": ", ec.message()));
  return task;
}

bool IsKernelBenchFile(const std::string& path) {
  return fs::path(path).extension() == ".py";
}

// A sent file's path, relative to the spec's folder: the number of leading
// "../" and the rest. INVALID_ARGUMENT for an absolute path, an empty one,
// or ".." after the first real component.
absl::Status SplitSentPath(const std::string& path, int* up, fs::path* rest) {
  if (path.empty() || path[0] == '/' || path.find('\0') != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("files: '", path, "' is not a path relative to the spec's folder"));
  }
  *up = 0;
  *rest = fs::path();
  for (absl::string_view part : absl::StrSplit(path, '/', absl::SkipEmpty())) {
    if (part == ".") continue;
    if (part == "..") {
      if (!rest->empty()) {
        return absl::InvalidArgumentError(absl::StrCat("files: '", path, "' climbs inside itself"));
      }
      ++*up;
      continue;
    }
    *rest /= std::string(part);
  }
  if (rest->empty()) return absl::InvalidArgumentError(absl::StrCat("files: '", path, "' names no file"));
  return absl::OkStatus();
}

// A folder removed with everything in it when this goes.
struct ScratchFolder {
  fs::path path;
  ~ScratchFolder() {
    std::error_code ec;
    if (!path.empty()) fs::remove_all(path, ec);
  }
};

}  // namespace

absl::StatusOr<v1::Task> TaskFor(const std::string& path, bool inline_files) {
  if (!IsKernelBenchFile(path)) {
    if (inline_files) return BundleTask(path);
    v1::Task task;
    task.set_format(v1::TASK_FORMAT_NATIVE);
    task.set_path(fs::absolute(path).string());
    return task;
  }
  v1::Task task;
  task.set_format(v1::TASK_FORMAT_KERNELBENCH);
  task.set_name(fs::path(path).stem().string());
  if (!inline_files) {
    task.set_path(fs::absolute(path).string());
    return task;
  }
  CRL_ASSIGN_OR_RETURN(std::string content, ReadFileToString(path, "task file"));
  v1::File* f = task.add_files();
  f->set_path(fs::path(path).filename().string());
  f->set_content(std::move(content));
  return task;
}

absl::Status InlineTasks(v1::RunSpec* spec) {
  return InlineTasksWhere(spec, [](const std::string&) { return true; });
}

absl::Status InlineTasksWhere(v1::RunSpec* spec, const std::function<bool(const std::string& path)>& inline_it) {
  int64_t total = 0;
  for (int i = 0; i < spec->tasks_size(); ++i) {
    v1::Task* task = spec->mutable_tasks(i);
    if (task->path().empty() || !inline_it(task->path())) continue;
    absl::StatusOr<v1::Task> bundled = TaskFor(task->path(), /*inline_files=*/true);
    if (!bundled.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("tasks[", i, "] (", task->path(), "): ", bundled.status().message()));
    }
    for (const v1::File& f : bundled->files()) total += static_cast<int64_t>(f.content().size());
    if (total > kMaxInlineTaskBytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "tasks[", i, "] (", task->path(), "): the run's task files pass ", kMaxInlineTaskBytes >> 20,
          " MiB inline; submit with --task_paths and give the orchestrator and workers the tasks at those paths"));
    }
    bundled->set_name(task->name());
    *task = std::move(*bundled);
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::RunSpec> ParseSentSpec(const v1::ParseRunSpecRequest& request, const std::string& scratch_dir) {
  const std::string name = request.file_name().empty() ? "run spec" : fs::path(request.file_name()).filename().string();
  constexpr int kMaxUp = 16;
  int deepest = 0;
  int64_t total = 0;
  std::vector<std::pair<int, fs::path>> split;
  for (const v1::File& f : request.files()) {
    int up = 0;
    fs::path rest;
    CRL_RETURN_IF_ERROR(SplitSentPath(f.path(), &up, &rest));
    if (up > kMaxUp) return absl::InvalidArgumentError(absl::StrCat("files: '", f.path(), "' climbs past ", kMaxUp, " folders"));
    deepest = std::max(deepest, up);
    total += static_cast<int64_t>(f.content().size());
    if (total > kMaxInlineTaskBytes) {
      return absl::InvalidArgumentError(absl::StrCat("files: past ", kMaxInlineTaskBytes >> 20, " MiB at '", f.path(), "'"));
    }
    split.emplace_back(up, std::move(rest));
  }
  // <scratch>/spec-<pid>-<n>/u1/.../u<deepest>: the spec's folder, deep
  // enough for every "../" sent.
  static std::atomic<int64_t> counter{0};
  std::error_code ec;
  const fs::path scratch = fs::weakly_canonical(scratch_dir, ec);  // task paths come back canonical
  if (ec) return absl::InternalError(absl::StrCat("ParseRunSpec: scratch folder ", scratch_dir, ": ", ec.message()));
  ScratchFolder root{scratch / absl::StrCat("spec-", ::getpid(), "-", counter.fetch_add(1))};
  fs::path base = root.path;
  for (int i = 1; i <= deepest; ++i) base /= absl::StrCat("u", i);
  base /= "spec";
  fs::create_directories(base, ec);
  if (ec) return absl::InternalError(absl::StrCat("ParseRunSpec: cannot create ", base.string(), ": ", ec.message()));
  for (int i = 0; i < request.files_size(); ++i) {
    fs::path at = base;
    for (int k = 0; k < split[i].first; ++k) at = at.parent_path();
    at /= split[i].second;
    fs::create_directories(at.parent_path(), ec);
    std::ofstream out(at, std::ios::binary | std::ios::trunc);
    out << request.files(i).content();
    if (ec || !out.good()) return absl::InternalError(absl::StrCat("ParseRunSpec: cannot write ", at.string()));
  }
  // Paths in errors and origins as the client knows them: the spec's
  // folder's own prefix first, then each folder above it as "../".
  const auto as_sent = [&](absl::string_view text) {
    std::string out(text);
    fs::path folder = base;
    std::string up;
    for (int k = 0; k <= deepest; ++k, folder = folder.parent_path(), up += "../") {
      out = absl::StrReplaceAll(out, {{folder.string() + "/", up}});
    }
    return out;
  };
  absl::StatusOr<v1::RunSpec> spec = ParseRunSpec(request.text(), base.string(), name);
  if (!spec.ok()) return absl::Status(spec.status().code(), as_sent(spec.status().message()));
  // The sent tasks inline; a path elsewhere is this machine's own.
  const std::string sent = root.path.string() + "/";
  absl::Status inlined =
      InlineTasksWhere(&*spec, [&sent](const std::string& path) { return path.rfind(sent, 0) == 0; });
  if (!inlined.ok()) return absl::Status(inlined.code(), as_sent(inlined.message()));
  for (v1::SftExample& e : *spec->mutable_sft_examples()) e.set_origin(as_sent(e.origin()));
  return spec;
}

}  // namespace crl::run
