// Speedups that travel (docs/benchmarks.md, "Across GPUs"): the same
// candidates measured on several machines, compared as CUDA-L1 compares its
// kernels across GPU kinds. Reads `crl bench` results (KernelBench's layout,
// or --cuda-l1's rows) with their provenance, matches candidates by key, and
// says per candidate what each machine measured, the ratio to the first,
// which stop being correct and which lose their speedup; per machine the
// mean, median and geomean of the trusted speedups.
#ifndef CRL_LIB_REPORT_PORT_H_
#define CRL_LIB_REPORT_PORT_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"

namespace crl::report {

// One candidate's result on one machine.
struct PortResult {
  std::string verdict;  // "OK", "WRONG_ANSWER", ..., "INFRA_ERROR"
  // The measured speedup when it is trusted (verified, timed, no trust flag).
  std::optional<double> speedup;
  std::vector<std::string> flags;
};

// One machine's result set.
struct PortSet {
  std::string label;  // "<provenance's GPU> (<file stem>)", else the file stem
  nlohmann::json provenance;  // as the file has it ({} when absent)
  // "L<level>/<problem>/<sample>" (KernelBench layout) or "L<level>/<task>"
  // (CUDA-L1 rows) -> result.
  std::map<std::string, PortResult> results;
};

// Reads a `crl bench` results file; INVALID_ARGUMENT names the file and what
// is missing.
absl::StatusOr<PortSet> ReadPortSet(const std::string& path);

struct PortRow {
  std::string key;
  std::vector<std::optional<PortResult>> on;  // per set; nullopt: not in it
  // Against the first set, per other set (index 0 unused).
  std::vector<std::optional<double>> ratio;  // speedup_i / speedup_0, both trusted
  std::vector<bool> stops_correct;           // OK on the first, not OK here
  std::vector<bool> loses_speedup;           // trusted > 1 on the first, not here
};

struct PortMachine {
  std::string label;
  int candidates = 0;  // keys present
  int correct = 0;     // verdict OK
  int trusted = 0;     // with a trusted speedup
  double mean = 0, median = 0, geomean = 0;  // over the trusted speedups
  // Over the keys trusted on every machine (the like-for-like set).
  int common = 0;
  double common_mean = 0, common_geomean = 0;
};

struct PortReport {
  std::vector<PortMachine> machines;
  std::vector<PortRow> rows;  // key order
};

// Needs at least two sets.
absl::StatusOr<PortReport> ComparePorts(const std::vector<PortSet>& sets);

nlohmann::json PortReportJson(const PortReport& report, const std::vector<PortSet>& sets);

// report.json, report.html and speedups.png under `out_dir`; the files written.
absl::StatusOr<std::vector<std::string>> WritePortReport(const PortReport& report, const std::vector<PortSet>& sets,
                                                         const std::string& out_dir);

}  // namespace crl::report

#endif  // CRL_LIB_REPORT_PORT_H_
