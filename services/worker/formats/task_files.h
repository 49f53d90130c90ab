// Where a request's task lives on the worker: a path that may not leave the
// task root, or an inline bundle unpacked once per content. Shared by both
// task formats.
#ifndef CRL_SERVICES_WORKER_FORMATS_TASK_FILES_H_
#define CRL_SERVICES_WORKER_FORMATS_TASK_FILES_H_

#include <string>

#include "absl/status/statusor.h"
#include "crl/v1/common.pb.h"

namespace crl {

class DiskBudget;

// `path` resolved against `task_root`, which it may not leave (empty root:
// any path). INVALID_ARGUMENT names the field.
absl::StatusOr<std::string> ResolveTaskPath(const std::string& task_root, const std::string& path);

// Unpacks `task.files` under `dir`/<sha256 of the bundle>/ (once: later
// requests with the same content reuse it, and concurrent ones agree) and
// returns that directory. File names must be relative without "..".
// `budget` (may be null) is told of each use and of each new bundle.
absl::StatusOr<std::string> UnpackBundle(const v1::Task& task, const std::string& dir, DiskBudget* budget);

}  // namespace crl

#endif  // CRL_SERVICES_WORKER_FORMATS_TASK_FILES_H_
