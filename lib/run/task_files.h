// The v1::Task message for a task on this machine: a path for an in-process
// service (same file system), or the files inline for a remote one.
#ifndef CRL_SERVICES_CLI_TASK_MESSAGE_H_
#define CRL_SERVICES_CLI_TASK_MESSAGE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "crl/v1/common.pb.h"
#include "crl/v1/orchestrator.pb.h"

namespace crl::cli {

// `path` is a native task directory or a KernelBench .py file. Inline: the
// directory's top-level files (task.yaml, references) or the .py file.
absl::StatusOr<v1::Task> TaskFor(const std::string& path, bool inline_files);

// Most bytes a run's inline task files may add up to (the orchestrator
// stores them with the run).
inline constexpr int64_t kMaxInlineTaskBytes = int64_t{64} << 20;

// Replaces each task of `spec` given by a path with its files inline
// (TaskFor), keeping its name, so that the orchestrator and its workers need
// not share this machine's files. INVALID_ARGUMENT names the task that
// cannot be read or that takes the total past kMaxInlineTaskBytes.
absl::Status InlineTasks(v1::RunSpec* spec);

}  // namespace crl::cli

#endif  // CRL_SERVICES_CLI_TASK_MESSAGE_H_
