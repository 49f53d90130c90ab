#include "lib/kernelbench/results.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/kernelbench/files.h"
#include "lib/reward/names.h"
#include "lib/stats/stats.h"

namespace crl::kb {

using nlohmann::json;
using stats::IsPositiveFinite;


const std::vector<double>& FastPThresholds() {
  static const std::vector<double> kThresholds = {0, 0.5, 0.8, 1, 1.5, 2};
  return kThresholds;
}

std::string FastPKey(double p) { return absl::StrCat("fast_", p); }

bool IsInfra(const SampleResult& r) { return !r.evaluated || r.verdict == "INFRA_ERROR"; }

bool IsCorrect(const SampleResult& r) { return !IsInfra(r) && r.verdict == "OK"; }

bool IsTrusted(const SampleResult& r) {
  return IsCorrect(r) && std::none_of(r.flags.begin(), r.flags.end(), IsTrustFlagName);
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
  s.geomean_speedup = stats::GeometricMean(speeds);
  s.median_speedup = stats::Median(stats::PositiveFinite(speeds));
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
  if (!r.timing_mode.empty()) j["metadata"]["timing_mode"] = r.timing_mode;
  if (!r.graph_fallback.empty()) j["metadata"]["graph_fallback"] = r.graph_fallback;
  if (r.max_abs_error && r.max_rel_error) {
    j["metadata"]["max_abs_error"] = *r.max_abs_error;
    j["metadata"]["max_rel_error"] = *r.max_rel_error;
  }
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
                {"median_s", stats::Median(stats::PositiveFinite(v))},
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

}  // namespace crl::kb
