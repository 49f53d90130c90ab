// Task files travelling with a run spec: the v1::Task for a task on this
// machine (a path for an in-process service on the same file system, or the
// files inline for a remote one), a spec's tasks inlined (what `crl run
// submit` sends), and a spec file parsed with the files a client sent
// (ParseRunSpec, for clients without the crl binary).
#ifndef CRL_LIB_RUN_TASK_FILES_H_
#define CRL_LIB_RUN_TASK_FILES_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "crl/v1/common.pb.h"
#include "crl/v1/orchestrator.pb.h"

namespace crl::run {

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
// The same for the tasks whose path `inline_it` picks.
absl::Status InlineTasksWhere(v1::RunSpec* spec, const std::function<bool(const std::string& path)>& inline_it);

// Parses request.text (a run spec file named request.file_name) against the
// files sent with it, written for the parse into a private folder under
// `scratch_dir` and removed after: relative task paths resolve among them,
// and those tasks come back inline (absolute paths are this machine's and
// stay paths). INVALID_ARGUMENT for a file path that is absolute or climbs
// inside itself (a/../b), files past kMaxInlineTaskBytes, and every parse
// error, with paths as the client sent them.
absl::StatusOr<v1::RunSpec> ParseSentSpec(const v1::ParseRunSpecRequest& request, const std::string& scratch_dir);

}  // namespace crl::run

#endif  // CRL_LIB_RUN_TASK_FILES_H_
