// One batch of (task, candidate) samples through the worker and the timing
// oracle, as `crl bench` runs it: every sample verified first (`jobs` at
// once), then the verified ones timed, each finished one journaled
// (bench_journal.h) so a batch run again resumes where it was.
#ifndef CRL_SERVICES_CLI_BATCH_EVAL_H_
#define CRL_SERVICES_CLI_BATCH_EVAL_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "crl/v1/eval.pb.h"
#include "crl/v1/timing.pb.h"
#include "services/cli/bench_journal.h"
#include "services/cli/endpoints.h"

namespace crl::cli {

// What one (task, candidate) evaluation produced.
struct Outcome {
  bool evaluated = false;  // false: infrastructure failure, not scored
  v1::Verdict verdict = v1::VERDICT_UNSPECIFIED;
  bool compiled = false;
  bool custom_kernel = false;
  double compile_seconds = 0;
  bool compile_cache_hit = false;
  std::string artifact_id;  // set when verification passed: what Time() measures
  // The verified sides the worker kept for Time()'s first measurement.
  std::string kept_pair;
  std::optional<v1::TimeResponse> timing;
  std::vector<std::string> flags;
  std::string message;
  // The correctness trials' largest errors, when they ran.
  std::optional<double> max_abs_error, max_rel_error;
  // Wall seconds of this sample's build + verification and of its timing,
  // as the batch saw them (waiting for a lane included).
  double verify_seconds = 0, time_seconds = 0;
  // The worker's account of the verification (EvaluateResponse): readying
  // the sides' processes off the lane, waiting for a lane, starting both
  // sides, the trials.
  double verify_prepare_seconds = 0, verify_lane_wait_seconds = 0, verify_start_seconds = 0,
         verify_trials_seconds = 0;
  // The reference's answers came from the worker's reference cache.
  bool reference_cached = false;
  // Times the verification stepped aside for timing (its waits are in
  // verify_lane_wait_seconds).
  int verify_steps_aside = 0;
};

// How each verified sample is timed.
struct TimingSettings {
  double target_rel_ci = 0;  // 0: the oracle's default
  double budget_seconds = 0;
  double min_sample_seconds = 0;  // 0: the oracle's default; negative: no batching
  int max_calls_per_sample = 0;   // 0: the oracle's default
  bool eager_timing = false;      // GPU calls as launched, not graph replays
  // A verified sample's sides wait this long on the worker for its timing
  // (EvaluateRequest.keep_for_timing_seconds; 0: timing starts its own).
  double keep_for_timing_seconds = 10;
  // Verify every sample first, then time the verified ones (no verification
  // runs while they are timed, so the GPU is emptied for timing once, not
  // once per sample; their sides are not kept).
  bool time_after_verify = false;
};

// One sample of a batch, ready to send: `error` set when it could not even be
// read (an infrastructure error, never sent).
struct BatchSample {
  std::string name;  // for the progress lines
  std::string key;   // the journal's (BenchJournal::Key)
  v1::Task task;
  std::string source;
  std::string filename;
  std::string error;
  v1::VerifyOptions options;  // sent with the sample's EvaluateRequest
};

// Compiles and verifies (no timing). `keep_for_timing_seconds` > 0: a
// verified candidate's sides are kept that long for its timing (kept_pair).
Outcome Verify(WorkerClientInterface* worker, const v1::Task& task, const std::string& source,
               const std::string& filename, double keep_for_timing_seconds = 0,
               const v1::VerifyOptions& options = {});

// The verdict, and the speedup when timed ("OK 1.23x"), for progress lines.
std::string Label(const Outcome& o);

// Runs fn(i) for i in [0, n) on `jobs` threads.
void ParallelFor(int n, int jobs, const std::function<void(int)>& fn);

// Verifies each sample and times it at once if it passed, `jobs` samples at
// a time: builds (CPU), verifications (sharing a GPU) and one measurement
// per lane (alone on its GPU) overlap. A measurement may share the
// machine's cores with a compiler; the oracle's noise check re-measures and
// flags what that disturbs. With a journal: samples it holds are taken from
// it, and each sample that finishes (not an infrastructure failure) is
// recorded as it does. Prints a one-line phase summary to stderr.
std::vector<Outcome> VerifyThenTime(const Endpoints& endpoints, const TimingSettings& settings,
                                    const std::vector<BatchSample>& samples, int jobs, BenchJournal* journal);

}  // namespace crl::cli

#endif  // CRL_SERVICES_CLI_BATCH_EVAL_H_
