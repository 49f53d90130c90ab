#include "services/cli/task_message.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/file.h"
#include "common/status.h"

namespace crl::cli {
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
  int64_t total = 0;
  for (int i = 0; i < spec->tasks_size(); ++i) {
    v1::Task* task = spec->mutable_tasks(i);
    if (task->path().empty()) continue;
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

}  // namespace crl::cli
