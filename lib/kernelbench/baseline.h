// KernelBench's baseline file: reference times per task,
//   {"level1": {"<task file>.py": {"mean": ms, "std", "min", "max",
//    "num_trials", "hardware", "device"}}, ...}
#ifndef CRL_LIB_KERNELBENCH_BASELINE_H_
#define CRL_LIB_KERNELBENCH_BASELINE_H_

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace crl::kb {

struct BaselineEntry {
  double mean = 0;  // milliseconds
  double std = 0;
  double min = 0;
  double max = 0;
  int num_trials = 0;
  std::string hardware;
  std::string device;
};

// "level1" -> task file name -> entry.
using Baseline = std::map<std::string, std::map<std::string, BaselineEntry>>;

// Reads a KernelBench baseline. `mean` is required and positive; the other
// fields are optional but must have the right type. Errors name the file and
// the key path, e.g. "level1/1_Foo.py/mean: expected a number, got string".
absl::StatusOr<Baseline> ReadBaseline(const std::string& path);
// The same checks on parsed JSON; `where` prefixes messages.
absl::StatusOr<Baseline> BaselineFromJson(const nlohmann::json& j, const std::string& where);
nlohmann::json BaselineJson(const Baseline& baseline);
// nullptr when absent.
const BaselineEntry* FindBaseline(const Baseline& baseline, int level, const std::string& file_name);
// Mean, sample standard deviation (n - 1; 0 for fewer than two), min, max and
// count of `ms`. All zero for an empty input.
BaselineEntry BaselineFromSamples(const std::vector<double>& ms, const std::string& hardware,
                                  const std::string& device);

}  // namespace crl::kb

#endif  // CRL_LIB_KERNELBENCH_BASELINE_H_
