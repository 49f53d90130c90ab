// crl-bench-worker's statistics, files and tasks: summaries of latencies,
// the shipped tasks and candidates, a task copied at one size set, and the
// tiny task whose evaluation is all overhead.
#ifndef CRL_TOOLS_BENCH_WORKER_BENCH_FILES_H_
#define CRL_TOOLS_BENCH_WORKER_BENCH_FILES_H_

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "crl/v1/common.pb.h"
#include "lib/task/native_task.h"

namespace crl::bench_worker {

struct Stats {
  size_t n = 0;
  double p50 = 0, p95 = 0, mean = 0, min = 0, max = 0;
};

// Linear interpolation between closest ranks; `v` sorted.
double Quantile(const std::vector<double>& v, double q);
// `v` times `scale`, summarized.
Stats Summarize(std::vector<double> v, double scale = 1);
nlohmann::json ToJson(const Stats& s);
void PrintStats(const std::string& label, const Stats& s);

std::string ReadFile(const std::filesystem::path& path);
bool WriteFile(const std::filesystem::path& path, const std::string& text);
// "OK" for VERDICT_OK.
std::string Short(v1::Verdict v);
std::string MakeTempDir(const std::string& prefix);
// The task directories (with a task.yaml) under `dir`, sorted.
std::vector<std::filesystem::path> ListTasks(const std::string& dir);

struct Candidate {
  std::filesystem::path task;
  std::string file;
  std::string source;
  std::string expected;  // verdict name from candidates/expect.yaml
};

// The shipped candidates of a task with extension `ext` (".cc" or ".cu").
std::vector<Candidate> ShippedCandidates(const std::filesystem::path& task, const std::string& ext);
// A copy of `task` whose timed size is `sizes` and which has no verify sizes:
// Measure then times the calls a correctness trial at that size set makes.
absl::StatusOr<std::filesystem::path> SizeVariant(const NativeTask& task, const SizeSet& sizes,
                                                  const std::filesystem::path& out);

// The tiny task (y = x + 1 over 1024 floats: an evaluation is the minimum
// 5 trials + 1 determinism re-run) written into `dir`, and its reference
// source for a backend.
bool WriteTinyTask(const std::filesystem::path& dir);
const char* TinySource(bool cuda);

}  // namespace crl::bench_worker

#endif  // CRL_TOOLS_BENCH_WORKER_BENCH_FILES_H_
