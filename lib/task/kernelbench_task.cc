#include "lib/task/kernelbench_task.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/file.h"
#include "common/hash.h"
#include "common/status.h"

namespace crl {

absl::StatusOr<KbTask> LoadKbTask(const std::string& path) {
  CRL_ASSIGN_OR_RETURN(std::string source, ReadFileToString(path, "task file"));
  for (const char* needed : {"class Model", "def get_inputs", "def get_init_inputs"}) {
    if (source.find(needed) == std::string::npos) {
      // The request's problem (a malformed task), not the machine's.
      return absl::InvalidArgumentError(
          absl::StrCat("task file ", path, ": no `", needed, "` (a KernelBench task defines "
                       "class Model, get_inputs() and get_init_inputs())"));
    }
  }
  KbTask task;
  task.path = std::filesystem::absolute(path).string();
  task.name = std::filesystem::path(path).stem().string();
  task.sha256 = Sha256Hex(source);
  task.source = std::move(source);
  return task;
}

}  // namespace crl
