// CUDA-L1's JSON-lines release format: one object per line with level_id,
// task_id, ref_code, custom_code, score_default and other score_* fields;
// our results per row; and a static check for custom kernels in Python.
#ifndef CRL_LIB_KERNELBENCH_CUDA_L1_H_
#define CRL_LIB_KERNELBENCH_CUDA_L1_H_

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace crl::kb {

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
  // The correctness trials' largest errors, when they ran.
  std::optional<double> max_abs_error, max_rel_error;
  // Wall seconds the batch spent building and verifying the row, and timing
  // it (0: not timed), and the measured pairs of the timing.
  double verify_seconds = 0, time_seconds = 0;
  int timing_pairs = 0;
  // Calls per timed sample, and the seconds the measurements held their lane
  // (TimeResponse.measure_seconds).
  int calls_per_sample = 0;
  double measure_seconds = 0;
  // TimeResponse.timing_mode and graph_fallback (empty: not timed).
  std::string timing_mode, graph_fallback;
};

// CUDA-L1's harness accepts an output with torch.allclose(atol=1e-2,
// rtol=1e-2); ours defaults to 1e-4.
inline constexpr double kCudaL1Tolerance = 1e-2;

// Whether outputs that failed (or passed) on numbers alone, with this
// largest absolute error, certainly pass allclose(atol=tol, rtol=tol):
// every element within tol absolutely. (Relative slack may let larger ones
// pass too: false means "not certainly".)
bool CertainlyWithin(double max_abs_error, double tol);

// Exactly level_id, task_id, status, correct, speedup, speedup_ci, flags,
// custom_kernel, reported_score, message, max_abs_error, max_rel_error,
// within_cuda_l1_tolerance (whether the errors pass at CUDA-L1's 1e-2: the
// answer to "did the tolerance decide?" for a WRONG_ANSWER), verify_seconds,
// time_seconds, timing_pairs, calls_per_sample, measure_seconds, timing_mode
// and graph_fallback (null when not timed, or when no fallback happened), and
// cuda_l1_verdict (CudaL1Verdict); absent optionals are null.
nlohmann::json CudaL1ResultJson(const CudaL1Result& r);

// The verdict CUDA-L1's harness would give, beside crl's `status`: "OK" for
// a row crl verified (its trust flags are crl's own: their harness has none of
// these checks) and for a WRONG_ANSWER whose errors certainly pass at 1e-2;
// otherwise crl's status.
std::string CudaL1Verdict(const CudaL1Result& r);

// {"rows", "correct", "trusted", "timed" (rows with a measured speedup, flagged
//  or not), "correct_at_cuda_l1" (rows whose CudaL1Verdict is OK),
//  "by_status": {status: n}, "by_flag": {flag: n},
//  "wrong_within_cuda_l1_tolerance" (WRONG_ANSWER rows whose errors pass at 1e-2),
//  "measured_speedup": {"count", "mean", "median", "geomean"},
//  "reported_score": {"count", "mean", "median", "geomean"}}.
// Both statistics are over the same rows: correct, no trust flag, a measured
// speedup ("trusted"); reported_score uses those of them that have a score, so
// the two can be compared like for like.
nlohmann::json CudaL1Summary(const std::vector<CudaL1Result>& results);


// True when the Python source builds or launches a kernel of its own:
// torch.utils.cpp_extension (load_inline, load), Triton (@triton.jit,
// @triton.autotune), CuPy (RawKernel, RawModule, ElementwiseKernel,
// ReductionKernel) or Numba (@cuda.jit). Comments are skipped. A static
// fallback for rows that never ran; the harness reports the real answer.
bool ContainsCustomKernel(const std::string& python_source);

}  // namespace crl::kb

#endif  // CRL_LIB_KERNELBENCH_CUDA_L1_H_
