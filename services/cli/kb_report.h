// KernelBench-style batch evaluation: task and generation listings, per-level
// fast_p summaries, KernelBench-compatible results JSON, baseline times, and
// the CUDA-L1 JSON-lines release format. Pure functions over files and plain
// structs; nothing here talks to a worker, so the policy is unit-testable.
//
// Formats (KernelBench / CUDA-L1):
//   tasks        DIR/level<L>/<problem>_<Name>.py
//   generations  DIR/level_<L>_problem_<P>_sample_<S>_kernel.py (or one
//                subdirectory deeper, e.g. DIR/level_1/...)
//   baseline     {"level1": {"<task file>.py": {"mean": ms, "std", "min",
//                "max", "num_trials", "hardware", "device"}}, ...}
//   CUDA-L1      one JSON object per line: level_id, task_id, ref_code,
//                custom_code, score_default, other score_* fields.
#ifndef CRL_SERVICES_CLI_KB_REPORT_H_
#define CRL_SERVICES_CLI_KB_REPORT_H_

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace crl::kb {

// "level1" for 1: the key of a level in baseline and results JSON.
std::string LevelKey(int level);

// ---- Tasks and generations --------------------------------------------------

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

// ---- Sample results and level summaries -------------------------------------

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
};

// The thresholds p of fast_p, ascending: 0, 0.5, 0.8, 1, 1.5, 2.
const std::vector<double>& FastPThresholds();
// "fast_0", "fast_0.5", ...
std::string FastPKey(double p);

// Every trust flag but NO_CUSTOM_KERNEL (a label, not a suspicion) voids a
// speedup. A "FLAG_" prefix is accepted.
bool IsTrustFlag(const std::string& flag);
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
//    "compile_cache_hit"}}}}, "builds": BuildSummaryJson}
// runtime and ref_runtime are milliseconds, -1 when not measured (KernelBench's
// convention); speedup and speedup_ci are null when not measured.
nlohmann::json ResultsJson(const nlohmann::json& config, const std::vector<SampleResult>& results,
                           const std::vector<LevelSummary>& summaries);

// ---- Statistics --------------------------------------------------------------
// Non-positive and non-finite values are ignored (a speedup of 0 means "not
// timed"); an empty input gives 0, never NaN, so reports stay valid JSON.
double Mean(const std::vector<double>& values);
double GeometricMean(const std::vector<double>& values);
double Median(const std::vector<double>& values);

// ---- Baseline -----------------------------------------------------------------

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

// ---- CUDA-L1 --------------------------------------------------------------------

struct CudaL1Row {
  int line = 0;  // 1-based line number in the file
  int level_id = 0;
  int task_id = 0;
  std::string ref_code;  // empty when missing or null
  // nullopt for null, missing, "None" or blank: the row has no kernel.
  std::optional<std::string> custom_code;
  std::optional<double> score_default;         // null, missing or "None": nullopt
  std::map<std::string, double> other_scores;  // other score_* fields with a value
};

// Parses one non-blank line. Errors name `line_number` and the field.
absl::StatusOr<CudaL1Row> ParseCudaL1Line(const std::string& line, int line_number);
// Streams the file one row at a time (blank lines skipped), so a large file
// is never held whole. A non-OK status from `fn` stops the walk and is
// returned as is.
absl::Status ForEachCudaL1Row(const std::string& path,
                              const std::function<absl::Status(CudaL1Row)>& fn);
absl::StatusOr<std::vector<CudaL1Row>> ReadCudaL1(const std::string& path);

struct CudaL1Result {
  int level_id = 0;
  int task_id = 0;
  std::string status;  // verdict name, "NO_KERNEL" or "INFRA_ERROR"
  bool correct = false;
  std::optional<double> speedup;
  std::optional<std::pair<double, double>> speedup_ci;
  std::vector<std::string> flags;
  bool custom_kernel = false;
  std::optional<double> reported_score;  // the row's score_default
  std::string message;
};

// Exactly level_id, task_id, status, correct, speedup, speedup_ci, flags,
// custom_kernel, reported_score and message; absent optionals are null.
nlohmann::json CudaL1ResultJson(const CudaL1Result& r);

// {"rows", "correct", "trusted", "by_status": {status: n}, "by_flag": {flag: n},
//  "measured_speedup": {"count", "mean", "median", "geomean"},
//  "reported_score": {"count", "mean", "median", "geomean"}}.
// Both statistics are over the same rows: correct, no trust flag, a measured
// speedup ("trusted"); reported_score uses those of them that have a score, so
// the two can be compared like for like.
nlohmann::json CudaL1Summary(const std::vector<CudaL1Result>& results);

// ---- Static custom-kernel check -------------------------------------------------

// True when the Python source builds or launches a kernel of its own:
// torch.utils.cpp_extension (load_inline, load), Triton (@triton.jit,
// @triton.autotune), CuPy (RawKernel, RawModule, ElementwiseKernel,
// ReductionKernel) or Numba (@cuda.jit). Comments are skipped. A static
// fallback for rows that never ran; the harness reports the real answer.
bool ContainsCustomKernel(const std::string& python_source);

// ---- Progress ----------------------------------------------------------------------

// On a terminal, redraws one line in place:
//   "[#####...............] 12/40 level1/3_Foo sample 0 ok 1.8x"
// otherwise prints one line per step ("12/40 level1/3_Foo ..."), which reads
// well in CI logs.
class ProgressBar {
 public:
  ProgressBar(std::ostream& out, int total, bool tty);
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  void Step(const std::string& label);
  // Ends the redrawn line. Idempotent; also run by the destructor.
  void Finish();

  int done() const { return done_; }

 private:
  std::ostream& out_;
  int total_;
  bool tty_;
  int done_ = 0;
  size_t last_width_ = 0;
  bool finished_ = false;
};

}  // namespace crl::kb

#endif  // CRL_SERVICES_CLI_KB_REPORT_H_
