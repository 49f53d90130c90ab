// KernelBench-style batch results: one SampleResult per evaluated
// generation, fast_p summaries per level, and the KernelBench-compatible
// results JSON. Pure functions over plain structs (unit-tested).
#ifndef CRL_LIB_KERNELBENCH_RESULTS_H_
#define CRL_LIB_KERNELBENCH_RESULTS_H_

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "lib/kernelbench/files.h"

namespace crl::kb {

struct SampleResult {
  int level = 0;
  int problem = 0;
  int sample = 0;
  // False: our infrastructure failed (worker lost, timeout on our side); the
  // sample was never scored. Counted apart from wrong answers.
  bool evaluated = false;
  std::string verdict;  // "OK", "COMPILE_ERROR", "WRONG_ANSWER", ..., "INFRA_ERROR"
  bool compiled = false;
  bool correct = false;  // informational; verdict "OK" is what counts
  double ref_ms = 0;
  double candidate_ms = 0;
  double speedup = 0;  // ref / candidate; <= 0 when not timed
  double speedup_ci_low = 0;
  double speedup_ci_high = 0;
  std::vector<std::string> flags;  // "SIDE_STREAM", "NO_CUSTOM_KERNEL", ...
  bool custom_kernel = false;
  double compile_seconds = 0;  // wall time of the build (or cache lookup)
  bool compile_cache_hit = false;
  std::string message;
  // How the timing took its samples ("graph", "eager"; empty: not timed),
  // and why not graphs where a GPU could have replayed them (metadata).
  std::string timing_mode, graph_fallback;
  // The correctness trials' largest errors, when they ran (metadata).
  std::optional<double> max_abs_error, max_rel_error;
};

// The thresholds p of fast_p, ascending: 0, 0.5, 0.8, 1, 1.5, 2.
const std::vector<double>& FastPThresholds();
// "fast_0", "fast_0.5", ...
std::string FastPKey(double p);

// Not evaluated, or verdict INFRA_ERROR.
bool IsInfra(const SampleResult& r);
// Evaluated and verdict OK (the `correct` field is not consulted).
bool IsCorrect(const SampleResult& r);
// Correct with no trust flag: its speedup may be believed.
bool IsTrusted(const SampleResult& r);
// speedup is finite and positive.
bool HasSpeedup(const SampleResult& r);

// The best sample of each problem of `level` in `results` (fast_p@k): correct
// and unflagged first (highest speedup first, untimed last), then correct but
// flagged, then evaluated but wrong, then infra failures; ties go to the
// lowest sample number so the choice is deterministic.
std::map<int, SampleResult> BestSamples(int level, const std::vector<SampleResult>& results);

struct LevelSummary {
  int level = 0;
  int tasks = 0;      // denominator of fast_p (see SummarizeLevel)
  int attempted = 0;  // tasks with at least one sample
  int correct = 0;    // tasks whose best sample is correct (flagged or not)
  // Tasks whose samples were all infra failures: unsolved, but not wrong.
  int infra_errors = 0;
  int infra_samples = 0;  // samples not evaluated, over all tasks (to re-run)
  std::map<std::string, double> fast_p;  // "fast_0" -> fraction of tasks
  double geomean_speedup = 0;  // over correct, unflagged, timed best samples
  double median_speedup = 0;   // same set
  int flagged = 0;  // tasks whose best sample is correct but flagged
};

// fast_p = tasks whose best sample is correct, unflagged and has speedup > p
// (strictly), over all tasks of the level, unattempted ones included. A
// correct sample with a trust flag stays "correct" but is never fast and is
// left out of the geomean and median: a flag means the timing itself is in
// doubt, so crediting its speed would reward the hack the flag caught.
// Results of other levels are ignored. `tasks` is max(num_tasks, problems seen
// in results), so a stray result can never push fast_p above 1.
LevelSummary SummarizeLevel(int level, int num_tasks, const std::vector<SampleResult>& results);

// One summary per level of `tasks`, in level order, plus any level that only
// appears in `results`.
std::vector<LevelSummary> SummarizeLevels(const std::vector<TaskFile>& tasks,
                                          const std::vector<SampleResult>& results);

// Fixed-width text, a header and one row per level: level, tasks, correct,
// fast_0 .. fast_2, geomean, median, flagged, infra.
std::string RenderTable(const std::vector<LevelSummary>& summaries);

nlohmann::json LevelSummaryJson(const LevelSummary& s);
nlohmann::json SampleResultJson(const SampleResult& r);
// Build latency over the samples that reached the compiler:
//   {"cold": {"count", "median_s", "max_s"}, "cached": {...}}.
nlohmann::json BuildSummaryJson(const std::vector<SampleResult>& results);

// KernelBench-compatible layout:
//   {"config": config, "summary": {"level1": {...}},
//    "level1": {"<problem>": {"<sample>": {"compiled", "correctness",
//    "runtime", "ref_runtime", "speedup", "speedup_ci", "verdict", "flags",
//    "custom_kernel", "metadata": {"message", "evaluated", "compile_seconds",
//    "compile_cache_hit", and when timed "timing_mode" (and "graph_fallback"
//    when set)}}}}, "builds": BuildSummaryJson}
// runtime and ref_runtime are milliseconds, -1 when not measured (KernelBench's
// convention); speedup and speedup_ci are null when not measured.
nlohmann::json ResultsJson(const nlohmann::json& config, const std::vector<SampleResult>& results,
                           const std::vector<LevelSummary>& summaries);

}  // namespace crl::kb

#endif  // CRL_LIB_KERNELBENCH_RESULTS_H_
