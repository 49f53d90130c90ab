// The v1::Task message for a task on this machine: a path for an in-process
// service (same file system), or the files inline for a remote one.
#ifndef CRL_SERVICES_CLI_TASK_MESSAGE_H_
#define CRL_SERVICES_CLI_TASK_MESSAGE_H_

#include <string>

#include "absl/status/statusor.h"
#include "crl/v1/common.pb.h"

namespace crl::cli {

// `path` is a native task directory or a KernelBench .py file. Inline: the
// directory's top-level files (task.yaml, references) or the .py file.
absl::StatusOr<v1::Task> TaskFor(const std::string& path, bool inline_files);

}  // namespace crl::cli

#endif  // CRL_SERVICES_CLI_TASK_MESSAGE_H_
