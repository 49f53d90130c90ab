// Native tasks (docs/task-format.md): loading and validating task.yaml, and
// turning a size set into the tensor specs a runner call needs.
#ifndef CRL_LIB_TASK_NATIVE_TASK_H_
#define CRL_LIB_TASK_NATIVE_TASK_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "lib/task/backend.h"
#include "lib/task/expr.h"
#include "runner/inputs.h"
#include "runner/protocol.h"

namespace crl {

struct TensorDecl {
  std::string name;
  int32_t dtype = 0;
  std::vector<std::string> shape;  // expressions over sizes
  // Inputs only: at least one; text as written and parsed.
  std::vector<std::string> distribution_text;
  std::vector<runner::Distribution> distributions;
};

// A validated native task. Immutable after loading; safe to share.
struct NativeTask {
  std::string name;
  std::string description;
  // Absolute directory the task was loaded from.
  std::string dir;
  std::vector<BackendKind> backends;
  // Backend -> absolute path of the reference source.
  std::map<BackendKind, std::string> reference;
  // The timed problem size, then extra sets used only by correctness trials.
  SizeSet sizes;
  std::vector<SizeSet> verify_sizes;
  std::vector<std::pair<std::string, double>> scalars;
  std::vector<TensorDecl> inputs;
  std::vector<TensorDecl> outputs;
  // dtype -> tolerance (manifest overrides on top of the defaults).
  std::map<int32_t, Tolerance> tolerance;
  std::string flops_expr;  // may be empty
  std::string bytes_expr;  // may be empty
  // Manifest flag for tasks kept to exercise the degeneracy probe.
  bool degenerate_expected = false;

  bool Supports(BackendKind backend) const;
  Tolerance ToleranceFor(int32_t dtype) const;
  // Every size set: `sizes` first, then `verify_sizes`.
  std::vector<SizeSet> AllSizeSets() const;
  // Specs of inputs / outputs at a size set (validated at load time for
  // every declared set, so these fail only for sets from elsewhere).
  absl::StatusOr<std::vector<runner::TensorSpec>> InputSpecs(const SizeSet& sizes) const;
  absl::StatusOr<std::vector<runner::TensorSpec>> OutputSpecs(const SizeSet& sizes) const;
  std::vector<double> ScalarValues() const;
};

// Loads `dir`/task.yaml. Errors are INVALID_ARGUMENT (NOT_FOUND for a missing
// file) and name the file, the line and the field: "…/task.yaml:14:
// inputs[0].dtype: unknown dtype 'float33'".
absl::StatusOr<NativeTask> LoadNativeTask(const std::string& dir);

// Parses manifest text; `dir` is where reference paths are resolved.
absl::StatusOr<NativeTask> ParseNativeTask(const std::string& yaml, const std::string& dir,
                                           const std::string& source_name);

}  // namespace crl

#endif  // CRL_LIB_TASK_NATIVE_TASK_H_
