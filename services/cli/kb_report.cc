#include "services/cli/kb_report.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <tuple>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "common/file.h"
#include "common/status.h"

namespace crl::kb {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A positive decimal integer that fits in int; the whole of `s`.
std::optional<int> ParsePositiveInt(absl::string_view s) {
  if (s.empty() || s.size() > 9) return std::nullopt;
  int v = 0;
  for (char c : s) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    v = v * 10 + (c - '0');
  }
  if (v <= 0) return std::nullopt;
  return v;
}

// Consumes "<prefix><int>" from the front of *s.
std::optional<int> ConsumeNumbered(absl::string_view* s, absl::string_view prefix) {
  if (!absl::ConsumePrefix(s, prefix)) return std::nullopt;
  size_t n = 0;
  while (n < s->size() && absl::ascii_isdigit(static_cast<unsigned char>((*s)[n]))) ++n;
  auto v = ParsePositiveInt(s->substr(0, n));
  s->remove_prefix(n);
  return v;
}

absl::Status CheckDirectory(const std::string& dir, const std::string& what) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return absl::NotFoundError(absl::StrCat(what, " ", dir, " does not exist"));
  if (!fs::is_directory(dir, ec)) {
    return absl::InvalidArgumentError(absl::StrCat(what, " ", dir, " is not a directory"));
  }
  return absl::OkStatus();
}

// Directory entries sorted by name, so listings (and "first seen" in
// duplicate errors) do not depend on the file system's order.
std::vector<fs::directory_entry> SortedEntries(const fs::path& dir, std::error_code* ec) {
  std::vector<fs::directory_entry> entries;
  for (const auto& e : fs::directory_iterator(dir, *ec)) entries.push_back(e);
  std::sort(entries.begin(), entries.end(),
            [](const auto& a, const auto& b) { return a.path().filename() < b.path().filename(); });
  return entries;
}

bool IsPositiveFinite(double v) { return std::isfinite(v) && v > 0; }

std::vector<double> PositiveFinite(const std::vector<double>& values) {
  std::vector<double> out;
  for (double v : values) {
    if (IsPositiveFinite(v)) out.push_back(v);
  }
  return out;
}

std::string StripFlagPrefix(const std::string& flag) {
  return absl::StartsWith(flag, "FLAG_") ? flag.substr(5) : flag;
}

}  // namespace

std::string LevelKey(int level) { return absl::StrCat("level", level); }

// ---- Tasks and generations --------------------------------------------------

std::optional<int> ParseTaskFileName(const std::string& file_name) {
  absl::string_view s = file_name;
  if (!absl::ConsumeSuffix(&s, ".py")) return std::nullopt;
  size_t underscore = s.find('_');
  if (underscore == absl::string_view::npos || underscore + 1 == s.size()) return std::nullopt;
  return ParsePositiveInt(s.substr(0, underscore));
}

absl::StatusOr<std::vector<TaskFile>> ListTasks(const std::string& dir) {
  CRL_RETURN_IF_ERROR(CheckDirectory(dir, "tasks directory"));
  std::error_code ec;
  std::vector<TaskFile> tasks;
  int levels = 0;
  for (const auto& level_entry : SortedEntries(dir, &ec)) {
    std::string level_name = level_entry.path().filename().string();
    absl::string_view rest = level_name;
    auto level = ConsumeNumbered(&rest, "level");
    if (!level || !rest.empty() || !level_entry.is_directory()) continue;
    ++levels;
    std::map<int, std::string> seen;  // problem -> file name
    std::error_code level_ec;
    for (const auto& e : SortedEntries(level_entry.path(), &level_ec)) {
      if (!e.is_regular_file()) continue;
      std::string name = e.path().filename().string();
      auto problem = ParseTaskFileName(name);
      if (!problem) continue;
      auto [it, inserted] = seen.emplace(*problem, name);
      if (!inserted) {
        return absl::InvalidArgumentError(absl::StrCat("tasks directory ", dir, ": problem ", *problem,
                                                       " of ", level_name, " appears twice: ",
                                                       it->second, " and ", name));
      }
      tasks.push_back({*level, *problem, name, e.path().string()});
    }
    if (level_ec) {
      return absl::InternalError(
          absl::StrCat("listing ", level_entry.path().string(), ": ", level_ec.message()));
    }
  }
  if (ec) return absl::InternalError(absl::StrCat("listing ", dir, ": ", ec.message()));
  if (tasks.empty()) {
    return absl::InvalidArgumentError(
        levels == 0 ? absl::StrCat("tasks directory ", dir, " has no level<N>/ subdirectory")
                    : absl::StrCat("tasks directory ", dir, ": no <id>_<Name>.py file in its ",
                                   levels, " level directories"));
  }
  std::sort(tasks.begin(), tasks.end(), [](const TaskFile& a, const TaskFile& b) {
    return std::tie(a.level, a.problem) < std::tie(b.level, b.problem);
  });
  return tasks;
}

std::map<int, int> TasksPerLevel(const std::vector<TaskFile>& tasks) {
  std::map<int, int> counts;
  for (const auto& t : tasks) ++counts[t.level];
  return counts;
}

std::string GenerationFileName(int level, int problem, int sample) {
  return absl::StrCat("level_", level, "_problem_", problem, "_sample_", sample, "_kernel.py");
}

std::optional<GenerationFile> ParseGenerationFileName(const std::string& file_name) {
  absl::string_view s = file_name;
  GenerationFile g;
  auto level = ConsumeNumbered(&s, "level_");
  auto problem = level ? ConsumeNumbered(&s, "_problem_") : std::nullopt;
  if (!problem || !absl::ConsumePrefix(&s, "_sample_")) return std::nullopt;
  // Sample 0 is the first sample, so this number may be zero.
  size_t n = 0;
  while (n < s.size() && absl::ascii_isdigit(static_cast<unsigned char>(s[n]))) ++n;
  int sample = 0;
  if (n == 0 || n > 9 || !absl::SimpleAtoi(s.substr(0, n), &sample)) return std::nullopt;
  s.remove_prefix(n);
  if (s != "_kernel.py") return std::nullopt;
  g.level = *level;
  g.problem = *problem;
  g.sample = sample;
  return g;
}

absl::StatusOr<std::vector<GenerationFile>> ListGenerations(const std::string& dir) {
  CRL_RETURN_IF_ERROR(CheckDirectory(dir, "generations directory"));
  std::vector<GenerationFile> out;
  std::map<std::tuple<int, int, int>, std::string> seen;
  auto add = [&](const fs::directory_entry& e) -> absl::Status {
    auto g = ParseGenerationFileName(e.path().filename().string());
    if (!g || !e.is_regular_file()) return absl::OkStatus();
    g->path = e.path().string();
    auto [it, inserted] = seen.emplace(std::make_tuple(g->level, g->problem, g->sample), g->path);
    if (!inserted) {
      return absl::InvalidArgumentError(absl::StrCat("generations directory ", dir, ": level ", g->level,
                                                     " problem ", g->problem, " sample ", g->sample,
                                                     " appears twice: ", it->second, " and ", g->path));
    }
    out.push_back(std::move(*g));
    return absl::OkStatus();
  };
  std::error_code ec;
  for (const auto& e : SortedEntries(dir, &ec)) {
    if (e.is_directory()) {
      std::error_code sub_ec;
      for (const auto& inner : SortedEntries(e.path(), &sub_ec)) CRL_RETURN_IF_ERROR(add(inner));
      if (sub_ec) return absl::InternalError(absl::StrCat("listing ", e.path().string(), ": ", sub_ec.message()));
    } else {
      CRL_RETURN_IF_ERROR(add(e));
    }
  }
  if (ec) return absl::InternalError(absl::StrCat("listing ", dir, ": ", ec.message()));
  std::sort(out.begin(), out.end(), [](const GenerationFile& a, const GenerationFile& b) {
    return std::tie(a.level, a.problem, a.sample) < std::tie(b.level, b.problem, b.sample);
  });
  return out;
}

// ---- Sample results and level summaries -------------------------------------

const std::vector<double>& FastPThresholds() {
  static const std::vector<double> kThresholds = {0, 0.5, 0.8, 1, 1.5, 2};
  return kThresholds;
}

std::string FastPKey(double p) { return absl::StrCat("fast_", p); }

bool IsTrustFlag(const std::string& flag) {
  std::string f = StripFlagPrefix(flag);
  return !f.empty() && f != "NO_CUSTOM_KERNEL" && f != "UNSPECIFIED";
}

bool IsInfra(const SampleResult& r) { return !r.evaluated || r.verdict == "INFRA_ERROR"; }

bool IsCorrect(const SampleResult& r) { return !IsInfra(r) && r.verdict == "OK"; }

bool IsTrusted(const SampleResult& r) {
  return IsCorrect(r) && std::none_of(r.flags.begin(), r.flags.end(), IsTrustFlag);
}

bool HasSpeedup(const SampleResult& r) { return IsPositiveFinite(r.speedup); }

std::map<int, SampleResult> BestSamples(int level, const std::vector<SampleResult>& results) {
  // Smaller is better.
  auto rank = [](const SampleResult& r) {
    if (IsInfra(r)) return 3;
    if (!IsCorrect(r)) return 2;
    return IsTrusted(r) ? 0 : 1;
  };
  auto better = [&](const SampleResult& a, const SampleResult& b) {
    int ra = rank(a), rb = rank(b);
    if (ra != rb) return ra < rb;
    double sa = HasSpeedup(a) ? a.speedup : -1, sb = HasSpeedup(b) ? b.speedup : -1;
    if (sa != sb) return sa > sb;
    return a.sample < b.sample;
  };
  std::map<int, SampleResult> best;
  for (const auto& r : results) {
    if (r.level != level) continue;
    auto it = best.find(r.problem);
    if (it == best.end()) {
      best.emplace(r.problem, r);
    } else if (better(r, it->second)) {
      it->second = r;
    }
  }
  return best;
}

LevelSummary SummarizeLevel(int level, int num_tasks, const std::vector<SampleResult>& results) {
  LevelSummary s;
  s.level = level;
  std::map<int, SampleResult> best = BestSamples(level, results);
  s.attempted = static_cast<int>(best.size());
  s.tasks = std::max(num_tasks, s.attempted);
  for (const auto& r : results) {
    if (r.level == level && IsInfra(r)) ++s.infra_samples;
  }
  std::vector<double> speeds;
  for (const auto& [problem, r] : best) {
    if (IsCorrect(r)) {
      ++s.correct;
      if (!IsTrusted(r)) {
        ++s.flagged;
      } else if (HasSpeedup(r)) {
        speeds.push_back(r.speedup);
      }
    } else if (IsInfra(r)) {
      ++s.infra_errors;
    }
  }
  for (double p : FastPThresholds()) {
    auto fast = std::count_if(speeds.begin(), speeds.end(), [p](double v) { return v > p; });
    s.fast_p[FastPKey(p)] = s.tasks > 0 ? static_cast<double>(fast) / s.tasks : 0.0;
  }
  s.geomean_speedup = GeometricMean(speeds);
  s.median_speedup = Median(speeds);
  return s;
}

std::vector<LevelSummary> SummarizeLevels(const std::vector<TaskFile>& tasks,
                                          const std::vector<SampleResult>& results) {
  std::map<int, int> counts = TasksPerLevel(tasks);
  for (const auto& r : results) counts.emplace(r.level, 0);
  std::vector<LevelSummary> out;
  for (const auto& [level, n] : counts) out.push_back(SummarizeLevel(level, n, results));
  return out;
}

std::string RenderTable(const std::vector<LevelSummary>& summaries) {
  std::vector<std::string> header = {"level", "tasks", "correct"};
  for (double p : FastPThresholds()) header.push_back(FastPKey(p));
  for (const char* h : {"geomean", "median", "flagged", "infra"}) header.push_back(h);

  std::vector<std::vector<std::string>> rows = {header};
  for (const auto& s : summaries) {
    std::vector<std::string> row = {absl::StrCat(s.level), absl::StrCat(s.tasks), absl::StrCat(s.correct)};
    for (double p : FastPThresholds()) {
      auto it = s.fast_p.find(FastPKey(p));
      row.push_back(absl::StrFormat("%.3f", it == s.fast_p.end() ? 0.0 : it->second));
    }
    row.push_back(absl::StrFormat("%.3f", s.geomean_speedup));
    row.push_back(absl::StrFormat("%.3f", s.median_speedup));
    row.push_back(absl::StrCat(s.flagged));
    row.push_back(absl::StrCat(s.infra_errors));
    rows.push_back(std::move(row));
  }
  std::vector<size_t> width(header.size(), 0);
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      if (i > 0) line += "  ";
      line += std::string(width[i] - row[i].size(), ' ') + row[i];
    }
    absl::StrAppend(&out, line, "\n");
  }
  return out;
}

json LevelSummaryJson(const LevelSummary& s) {
  json j;
  j["level"] = s.level;
  j["tasks"] = s.tasks;
  j["attempted"] = s.attempted;
  j["correct"] = s.correct;
  j["flagged"] = s.flagged;
  j["infra_errors"] = s.infra_errors;
  j["infra_samples"] = s.infra_samples;
  for (const auto& [key, value] : s.fast_p) j[key] = value;
  j["geomean_speedup"] = s.geomean_speedup;
  j["median_speedup"] = s.median_speedup;
  return j;
}

json SampleResultJson(const SampleResult& r) {
  json j;
  j["compiled"] = r.compiled;
  j["correctness"] = IsCorrect(r);
  j["runtime"] = IsPositiveFinite(r.candidate_ms) ? r.candidate_ms : -1.0;
  j["ref_runtime"] = IsPositiveFinite(r.ref_ms) ? r.ref_ms : -1.0;
  j["speedup"] = HasSpeedup(r) ? json(r.speedup) : json(nullptr);
  j["speedup_ci"] = HasSpeedup(r) && IsPositiveFinite(r.speedup_ci_high)
                        ? json::array({r.speedup_ci_low, r.speedup_ci_high})
                        : json(nullptr);
  j["verdict"] = r.verdict.empty() && !r.evaluated ? std::string("INFRA_ERROR") : r.verdict;
  j["flags"] = r.flags;
  j["custom_kernel"] = r.custom_kernel;
  j["metadata"] = {{"message", r.message},
                   {"evaluated", r.evaluated},
                   {"compile_seconds", r.compile_seconds},
                   {"compile_cache_hit", r.compile_cache_hit}};
  return j;
}

json BuildSummaryJson(const std::vector<SampleResult>& results) {
  std::vector<double> cold, cached;
  for (const auto& r : results) {
    if (r.compile_seconds <= 0) continue;
    (r.compile_cache_hit ? cached : cold).push_back(r.compile_seconds);
  }
  auto stats = [](const std::vector<double>& v) {
    return json{{"count", v.size()},
                {"median_s", Median(v)},
                {"max_s", v.empty() ? 0.0 : *std::max_element(v.begin(), v.end())}};
  };
  return {{"cold", stats(cold)}, {"cached", stats(cached)}};
}

json ResultsJson(const json& config, const std::vector<SampleResult>& results,
                 const std::vector<LevelSummary>& summaries) {
  json j;
  j["config"] = config;
  j["summary"] = json::object();
  for (const auto& s : summaries) {
    j["summary"][LevelKey(s.level)] = LevelSummaryJson(s);
    j[LevelKey(s.level)] = json::object();  // present even with no sample
  }
  for (const auto& r : results) {
    j[LevelKey(r.level)][std::to_string(r.problem)][std::to_string(r.sample)] = SampleResultJson(r);
  }
  j["builds"] = BuildSummaryJson(results);
  return j;
}

// ---- Statistics --------------------------------------------------------------

double Mean(const std::vector<double>& values) {
  std::vector<double> v = PositiveFinite(values);
  if (v.empty()) return 0;
  double sum = 0;
  for (double x : v) sum += x;
  return sum / v.size();
}

double GeometricMean(const std::vector<double>& values) {
  std::vector<double> v = PositiveFinite(values);
  if (v.empty()) return 0;
  double log_sum = 0;  // logs, so a long list of large ratios cannot overflow
  for (double x : v) log_sum += std::log(x);
  return std::exp(log_sum / v.size());
}

double Median(const std::vector<double>& values) {
  std::vector<double> v = PositiveFinite(values);
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// ---- Baseline -----------------------------------------------------------------

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

// ---- CUDA-L1 --------------------------------------------------------------------

namespace {

// A score: number, or null / missing / "None" / "" (nullopt), or a string
// holding a number (Python dumps sometimes stringify).
absl::StatusOr<std::optional<double>> ScoreField(const json& row, const std::string& name,
                                                 const std::string& where) {
  auto it = row.find(name);
  if (it == row.end() || it->is_null()) return std::optional<double>();
  if (it->is_number()) return std::optional<double>(it->get<double>());
  if (it->is_string()) {
    std::string s(absl::StripAsciiWhitespace(it->get<std::string>()));
    if (s.empty() || s == "None") return std::optional<double>();
    double v;
    if (absl::SimpleAtod(s, &v)) return std::optional<double>(v);
    return absl::InvalidArgumentError(absl::StrCat(where, name, ": expected a number, got \"", s, "\""));
  }
  return absl::InvalidArgumentError(
      absl::StrCat(where, name, ": expected a number or null, got ", it->type_name()));
}

absl::StatusOr<int> IdField(const json& row, const char* name, const std::string& where) {
  auto it = row.find(name);
  if (it == row.end()) return absl::InvalidArgumentError(absl::StrCat(where, name, ": missing"));
  if (!it->is_number_integer()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, name, ": expected an integer, got ", it->type_name()));
  }
  long long v = it->get<long long>();
  if (v < 0 || v > std::numeric_limits<int>::max()) {
    return absl::InvalidArgumentError(absl::StrCat(where, name, ": out of range: ", v));
  }
  return static_cast<int>(v);
}

bool IsBlank(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isspace(c); });
}

}  // namespace

absl::StatusOr<CudaL1Row> ParseCudaL1Line(const std::string& line, int line_number) {
  std::string where = absl::StrCat("line ", line_number, ": ");
  json row;
  try {
    row = json::parse(line);
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(where, "not JSON: ", e.what()));
  }
  if (!row.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(where, "expected a JSON object, got ", row.type_name()));
  }
  CudaL1Row r;
  r.line = line_number;
  CRL_ASSIGN_OR_RETURN(r.level_id, IdField(row, "level_id", where));
  CRL_ASSIGN_OR_RETURN(r.task_id, IdField(row, "task_id", where));
  if (auto it = row.find("ref_code"); it != row.end() && !it->is_null()) {
    if (!it->is_string()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "ref_code: expected a string, got ", it->type_name()));
    }
    r.ref_code = it->get<std::string>();
  }
  if (auto it = row.find("custom_code"); it != row.end() && !it->is_null()) {
    if (!it->is_string()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "custom_code: expected a string or null, got ", it->type_name()));
    }
    std::string code = it->get<std::string>();
    // The release writes Python's None as the string "None" for rows with no kernel.
    absl::string_view trimmed = absl::StripAsciiWhitespace(code);
    if (!trimmed.empty() && trimmed != "None") r.custom_code = std::move(code);
  }
  CRL_ASSIGN_OR_RETURN(r.score_default, ScoreField(row, "score_default", where));
  for (const auto& [key, value] : row.items()) {
    if (!absl::StartsWith(key, "score_") || key == "score_default") continue;
    CRL_ASSIGN_OR_RETURN(std::optional<double> score, ScoreField(row, key, where));
    if (score) r.other_scores[key] = *score;
  }
  return r;
}

absl::Status ForEachCudaL1Row(const std::string& path,
                              const std::function<absl::Status(CudaL1Row)>& fn) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read CUDA-L1 file ", path));
  std::string line;
  int line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (IsBlank(line)) continue;
    auto row = ParseCudaL1Line(line, line_number);
    if (!row.ok()) return Annotate(row.status(), absl::StrCat("CUDA-L1 file ", path));
    CRL_RETURN_IF_ERROR(fn(std::move(*row)));
  }
  if (in.bad()) return absl::InternalError(absl::StrCat("reading CUDA-L1 file ", path, " failed"));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<CudaL1Row>> ReadCudaL1(const std::string& path) {
  std::vector<CudaL1Row> rows;
  CRL_RETURN_IF_ERROR(ForEachCudaL1Row(path, [&rows](CudaL1Row r) {
    rows.push_back(std::move(r));
    return absl::OkStatus();
  }));
  return rows;
}

json CudaL1ResultJson(const CudaL1Result& r) {
  json j;
  j["level_id"] = r.level_id;
  j["task_id"] = r.task_id;
  j["status"] = r.status;
  j["correct"] = r.correct;
  j["speedup"] = r.speedup ? json(*r.speedup) : json(nullptr);
  j["speedup_ci"] = r.speedup_ci ? json::array({r.speedup_ci->first, r.speedup_ci->second}) : json(nullptr);
  j["flags"] = r.flags;
  j["custom_kernel"] = r.custom_kernel;
  j["reported_score"] = r.reported_score ? json(*r.reported_score) : json(nullptr);
  j["message"] = r.message;
  return j;
}

json CudaL1Summary(const std::vector<CudaL1Result>& results) {
  std::map<std::string, int> by_status, by_flag;
  std::vector<double> measured, reported;
  int correct = 0;
  for (const auto& r : results) {
    ++by_status[r.status];
    std::set<std::string> flags;
    for (const auto& f : r.flags) flags.insert(StripFlagPrefix(f));
    for (const auto& f : flags) ++by_flag[f];
    if (!r.correct) continue;
    ++correct;
    if (std::any_of(r.flags.begin(), r.flags.end(), IsTrustFlag)) continue;
    if (!r.speedup || !IsPositiveFinite(*r.speedup)) continue;
    measured.push_back(*r.speedup);
    if (r.reported_score && IsPositiveFinite(*r.reported_score)) reported.push_back(*r.reported_score);
  }
  auto stats = [](const std::vector<double>& v) {
    return json{{"count", v.size()}, {"mean", Mean(v)}, {"median", Median(v)}, {"geomean", GeometricMean(v)}};
  };
  json j;
  j["rows"] = results.size();
  j["correct"] = correct;
  j["trusted"] = measured.size();
  j["by_status"] = by_status.empty() ? json::object() : json(by_status);
  j["by_flag"] = by_flag.empty() ? json::object() : json(by_flag);
  j["measured_speedup"] = stats(measured);
  j["reported_score"] = stats(reported);
  return j;
}

// ---- Static custom-kernel check -------------------------------------------------

namespace {

// Python source as tokens, with comments and string literals dropped: a
// docstring saying "no load_inline() here" must not count, and CUDA code
// inside strings has no Python calls worth seeing. "\n" marks the end of a
// logical line (newlines inside brackets do not count).
std::vector<std::string> PythonCodeTokens(const std::string& src) {
  std::vector<std::string> tokens;
  size_t i = 0, n = src.size();
  int depth = 0;
  while (i < n) {
    char c = src[i];
    if (c == '#') {
      while (i < n && src[i] != '\n') ++i;
    } else if (c == '\\' && i + 1 < n && src[i + 1] == '\n') {
      i += 2;  // explicit line continuation
    } else if (c == '\n') {
      if (depth == 0 && (tokens.empty() || tokens.back() != "\n")) tokens.push_back("\n");
      ++i;
    } else if (c == '"' || c == '\'') {
      bool triple = i + 2 < n && src[i + 1] == c && src[i + 2] == c;
      i += triple ? 3 : 1;
      while (i < n) {
        if (src[i] == '\\') {
          i += 2;  // escapes (raw strings too cannot end in an odd backslash)
        } else if (triple && src[i] == c && i + 2 < n && src[i + 1] == c && src[i + 2] == c) {
          i += 3;
          break;
        } else if (!triple && (src[i] == c || src[i] == '\n')) {
          ++i;
          break;
        } else {
          ++i;
        }
      }
      tokens.push_back("\"\"");
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t start = i;
      while (i < n && (std::isalnum(static_cast<unsigned char>(src[i])) || src[i] == '_')) ++i;
      tokens.push_back(src.substr(start, i - start));
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else {
      if (c == '(' || c == '[' || c == '{') ++depth;
      if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
      tokens.push_back(std::string(1, c));
      ++i;
    }
  }
  return tokens;
}

}  // namespace

bool ContainsCustomKernel(const std::string& python_source) {
  std::vector<std::string> t = PythonCodeTokens(python_source);
  size_t n = t.size();
  auto at = [&](size_t i, const char* s) { return i < n && t[i] == s; };
  // Names bound by "from torch.utils.cpp_extension import load [as x]" and
  // "from triton import jit [as x]": a bare call or decorator of them counts.
  // "import torch.utils.cpp_extension as ext": ext.load(...) counts.
  std::set<std::string> extension_loaders, triton_jits, extension_modules = {"cpp_extension"};
  for (size_t i = 0; i + 1 < n; ++i) {
    if (t[i] == "cpp_extension" && at(i + 1, "as") && i + 2 < n) extension_modules.insert(t[i + 2]);
    bool cpp = t[i] == "cpp_extension" && at(i + 1, "import");
    bool triton = t[i] == "triton" && at(i + 1, "import") && i > 0 && t[i - 1] == "from";
    if (!cpp && !triton) continue;
    for (size_t k = i + 2; k < n && t[k] != "\n"; ++k) {
      std::string name = t[k];
      if (name != "load" && name != "load_inline" && name != "jit" && name != "autotune") continue;
      std::string bound = at(k + 1, "as") && k + 2 < n ? t[k + 2] : name;
      (cpp ? extension_loaders : triton_jits).insert(bound);
    }
  }
  for (size_t i = 0; i < n; ++i) {
    const std::string& w = t[i];
    bool after_dot = i > 0 && t[i - 1] == ".";
    bool called = at(i + 1, "(");
    if (w == "load_inline" && called) return true;
    if (extension_modules.count(w) && at(i + 1, ".") && (at(i + 2, "load") || at(i + 2, "load_inline")) &&
        at(i + 3, "(")) {
      return true;
    }
    if (!after_dot && called && extension_loaders.count(w)) return true;
    if (w == "triton" && at(i + 1, ".") && (at(i + 2, "jit") || at(i + 2, "autotune")) &&
        (at(i + 3, "(") || (i > 0 && t[i - 1] == "@"))) {
      return true;
    }
    if (i > 0 && t[i - 1] == "@" && triton_jits.count(w)) return true;
    if ((w == "RawKernel" || w == "RawModule" || w == "ElementwiseKernel" || w == "ReductionKernel") &&
        called) {
      return true;
    }
    // Numba: @cuda.jit or @numba.cuda.jit.
    if (w == "cuda" && at(i + 1, ".") && at(i + 2, "jit") && i > 0 &&
        (t[i - 1] == "@" || (t[i - 1] == "." && i > 2 && t[i - 2] == "numba" && t[i - 3] == "@"))) {
      return true;
    }
    if (w == "jiterator" && at(i + 1, ".") && at(i + 2, "_create_jit_fn")) return true;
  }
  return false;
}

// ---- Progress ----------------------------------------------------------------------

ProgressBar::ProgressBar(std::ostream& out, int total, bool tty) : out_(out), total_(total), tty_(tty) {}

ProgressBar::~ProgressBar() { Finish(); }

void ProgressBar::Step(const std::string& label) {
  ++done_;
  std::string count = absl::StrCat(done_, "/", total_);
  if (!tty_) {
    out_ << count << " " << label << "\n" << std::flush;
    return;
  }
  constexpr int kWidth = 20;
  int filled = total_ > 0 ? std::min(done_, total_) * kWidth / total_ : 0;
  std::string line = absl::StrCat("[", std::string(filled, '#'), std::string(kWidth - filled, '.'), "] ",
                                  count, " ", label);
  size_t width = line.size();
  // Blank out what is left of a longer previous line.
  if (line.size() < last_width_) line += std::string(last_width_ - line.size(), ' ');
  last_width_ = width;
  out_ << "\r" << line << std::flush;
}

void ProgressBar::Finish() {
  if (finished_) return;
  finished_ = true;
  if (tty_ && done_ > 0) out_ << "\n" << std::flush;
}

}  // namespace crl::kb
