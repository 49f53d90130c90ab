#include "lib/kernelbench/baseline.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/file.h"
#include "common/status.h"
#include "lib/kernelbench/files.h"
#include "lib/stats/stats.h"

namespace crl::kb {

using nlohmann::json;
using stats::IsPositiveFinite;


absl::StatusOr<Baseline> BaselineFromJson(const json& j, const std::string& where) {
  auto error = [&](const std::string& key, const std::string& problem) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": ", key, ": ", problem));
  };
  auto expected = [&](const std::string& key, const char* want, const json& got) {
    return error(key, absl::StrCat("expected ", want, ", got ", got.type_name()));
  };
  if (!j.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": expected an object of levels, got ", j.type_name()));
  }
  Baseline baseline;
  for (const auto& [level, tasks] : j.items()) {
    if (!tasks.is_object()) return expected(level, "an object of tasks", tasks);
    auto& out_level = baseline[level];
    for (const auto& [task, entry] : tasks.items()) {
      std::string key = absl::StrCat(level, "/", task);
      if (!entry.is_object()) return expected(key, "an object", entry);
      BaselineEntry e;
      const std::pair<const char*, double*> numbers[] = {
          {"mean", &e.mean}, {"std", &e.std}, {"min", &e.min}, {"max", &e.max}};
      for (auto [name, field] : numbers) {
        auto it = entry.find(name);
        if (it == entry.end()) {
          if (field == &e.mean) return error(absl::StrCat(key, "/mean"), "missing");
          continue;
        }
        if (!it->is_number()) return expected(absl::StrCat(key, "/", name), "a number", *it);
        *field = it->get<double>();
      }
      // A zero or negative reference time would turn every speedup infinite.
      if (!IsPositiveFinite(e.mean)) {
        return error(absl::StrCat(key, "/mean"), absl::StrCat("must be positive, got ", e.mean));
      }
      if (auto it = entry.find("num_trials"); it != entry.end()) {
        if (!it->is_number_integer()) return expected(key + "/num_trials", "an integer", *it);
        long long n = it->get<long long>();
        if (n < 0 || n > std::numeric_limits<int>::max()) {
          return error(key + "/num_trials", absl::StrCat("out of range: ", n));
        }
        e.num_trials = static_cast<int>(n);
      }
      const std::pair<const char*, std::string*> strings[] = {{"hardware", &e.hardware},
                                                              {"device", &e.device}};
      for (auto [name, field] : strings) {
        auto it = entry.find(name);
        if (it == entry.end()) continue;
        if (!it->is_string()) return expected(absl::StrCat(key, "/", name), "a string", *it);
        *field = it->get<std::string>();
      }
      out_level[task] = std::move(e);
    }
  }
  return baseline;
}

absl::StatusOr<Baseline> ReadBaseline(const std::string& path) {
  CRL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path, "baseline"));
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("baseline ", path, ": not JSON: ", e.what()));
  }
  return BaselineFromJson(j, absl::StrCat("baseline ", path));
}

json BaselineJson(const Baseline& baseline) {
  json j = json::object();
  for (const auto& [level, tasks] : baseline) {
    j[level] = json::object();
    for (const auto& [task, e] : tasks) {
      j[level][task] = {{"mean", e.mean},         {"std", e.std},
                        {"min", e.min},           {"max", e.max},
                        {"num_trials", e.num_trials}, {"hardware", e.hardware},
                        {"device", e.device}};
    }
  }
  return j;
}

const BaselineEntry* FindBaseline(const Baseline& baseline, int level, const std::string& file_name) {
  auto l = baseline.find(LevelKey(level));
  if (l == baseline.end()) return nullptr;
  auto t = l->second.find(file_name);
  return t == l->second.end() ? nullptr : &t->second;
}

BaselineEntry BaselineFromSamples(const std::vector<double>& ms, const std::string& hardware,
                                  const std::string& device) {
  BaselineEntry e;
  e.hardware = hardware;
  e.device = device;
  e.num_trials = static_cast<int>(ms.size());
  if (ms.empty()) return e;
  double sum = 0;
  for (double x : ms) sum += x;
  e.mean = sum / ms.size();
  e.min = *std::min_element(ms.begin(), ms.end());
  e.max = *std::max_element(ms.begin(), ms.end());
  if (ms.size() > 1) {
    double ss = 0;
    for (double x : ms) ss += (x - e.mean) * (x - e.mean);
    e.std = std::sqrt(ss / (ms.size() - 1));
  }
  return e;
}

}  // namespace crl::kb
