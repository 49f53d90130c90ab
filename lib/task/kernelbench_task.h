// KernelBench-format tasks (docs/kernelbench.md): a Python file with
// `class Model`, module-level size constants, get_inputs() and
// get_init_inputs(). The file's code runs only inside the worker's sandbox;
// here it is only read and identified.
#ifndef CRL_LIB_TASK_KERNELBENCH_TASK_H_
#define CRL_LIB_TASK_KERNELBENCH_TASK_H_

#include <string>

#include "absl/status/statusor.h"

namespace crl {

struct KbTask {
  std::string name;    // file stem, e.g. "3_Softmax"
  std::string path;    // absolute path of the .py file
  std::string sha256;  // of the file's content
  std::string source;  // the file's content
};

// Reads and sanity-checks a task file: FAILED_PRECONDITION naming what is
// missing (class Model, get_inputs, get_init_inputs), NOT_FOUND when the
// file cannot be read.
absl::StatusOr<KbTask> LoadKbTask(const std::string& path);

}  // namespace crl

#endif  // CRL_LIB_TASK_KERNELBENCH_TASK_H_
