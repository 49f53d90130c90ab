// KernelBench's file layouts (KernelBench, CUDA-L1):
//   tasks        DIR/level<L>/<problem>_<Name>.py
//   generations  DIR/level_<L>_problem_<P>_sample_<S>_kernel.py (or one
//                subdirectory deeper, e.g. DIR/level_1/...)
// Listings are sorted and checked for duplicates; nothing here runs code.
#ifndef CRL_LIB_KERNELBENCH_FILES_H_
#define CRL_LIB_KERNELBENCH_FILES_H_

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace crl::kb {

// "level1" for 1: the key of a level in baseline and results JSON.
std::string LevelKey(int level);


struct TaskFile {
  int level = 0;
  int problem = 0;
  std::string name;  // file name, e.g. "1_Square_matrix_multiplication_.py"
  std::string path;  // full path
};

// Parses "<problem>_<Name>.py" (problem a positive integer, Name non-empty).
std::optional<int> ParseTaskFileName(const std::string& file_name);

// Every task under DIR/level<N>/, sorted by (level, problem). Other files and
// directories are ignored. Errors: DIR missing or not a directory, no task at
// all, or two files with the same problem id in one level (both named).
absl::StatusOr<std::vector<TaskFile>> ListTasks(const std::string& dir);

// Number of tasks per level.
std::map<int, int> TasksPerLevel(const std::vector<TaskFile>& tasks);

struct GenerationFile {
  int level = 0;
  int problem = 0;
  int sample = 0;
  std::string path;
};

// "level_<L>_problem_<P>_sample_<S>_kernel.py".
std::string GenerationFileName(int level, int problem, int sample);
// Inverse of GenerationFileName; nullopt for any other name. `path` is left
// empty.
std::optional<GenerationFile> ParseGenerationFileName(const std::string& file_name);

// Generation files directly in DIR or in its immediate subdirectories, sorted
// by (level, problem, sample). An empty result is not an error (every task
// then counts as unattempted). Errors: DIR missing, or the same (level,
// problem, sample) found twice (both paths named).
absl::StatusOr<std::vector<GenerationFile>> ListGenerations(const std::string& dir);

}  // namespace crl::kb

#endif  // CRL_LIB_KERNELBENCH_FILES_H_
