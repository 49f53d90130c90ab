// The correctness protocol (docs/worker.md, docs/kernelbench.md), written once
// for every task format: trials with secret seeds planned by the task, the
// reference and the candidate in two processes on one lane, and every
// judgement made here from the bytes they return (outputs, tolerance,
// violations, aliasing, determinism, degenerate-task probes).
#ifndef CRL_SERVICES_WORKER_VERIFIER_H_
#define CRL_SERVICES_WORKER_VERIFIER_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/context.h"
#include "crl/v1/common.pb.h"
#include "services/worker/task_format.h"

namespace crl {

struct VerifyConfig {
  // Trials requested; each format raises or caps it (EvalTask::PlanTrials).
  int trials = 5;
  // Re-runs of the first trial on fresh allocations (catches races and reads
  // of uninitialised memory).
  int determinism_reruns = 1;
  // Per-call limit; the reference gets the same.
  double call_timeout_seconds = 20;
  // Request overrides of the task's tolerances.
  ToleranceOverride tolerance;
  // A candidate that returns the memory its previous call returned (one
  // buffer, overwritten by each call) is WRONG_ANSWER; true downgrades it to
  // FLAG_WRITE_AFTER_RETURN (the reward is withheld either way).
  bool reused_output_as_flag = false;
  // Run both sides of a trial at once (a GPU lane: two processes, and large
  // outputs' trips through their pipes overlap). Not on a host lane: its
  // one CPU would run both, and each call would near its limit twice as fast.
  bool concurrent_sides = false;
};

struct VerifyResult {
  v1::Verdict verdict = v1::VERDICT_UNSPECIFIED;
  v1::CorrectnessReport report;
  // GLOBAL_FLAGS, NO_CUSTOM_KERNEL; evidence line by line.
  std::vector<v1::Flag> flags;
  std::vector<std::string> flag_evidence;
  bool custom_kernel = false;
  // Set when probes ran: the trivial solution that passed every probed
  // trial ("" when none did). "memorised" is the previous trial's reference
  // output; "memorised within 10x the tolerance" says the outputs are nearly
  // independent of the inputs.
  bool probed = false;
  std::string degenerate_probe;
  // Trials the task planned (some may have been skipped or not reached).
  size_t planned_trials = 0;
};

// Wall time two sessions need for `config`'s calls on `task`.
double VerifyBudgetSeconds(const EvalTask& task, const VerifyConfig& config);

// Where the protocol lets its caller act, each time with neither side in a
// call (the caller may let go of its lane there). Either may be empty.
struct CallHooks {
  // As soon as a call's sides have answered, before the worker compares
  // what they answered (the worker's own work: the lane is not needed).
  std::function<void()> after_call;
  // Before each call; an error ends the protocol with that status.
  std::function<absl::Status()> before_call;
};

// Runs the protocol; both sides are started on the lane the caller holds.
// `probe` asks the reference for degenerate-task probes on the trials that
// allow them. CANCELLED / DEADLINE_EXCEEDED when `context` ends first; every
// outcome about the code is a verdict, a failure of the reference always
// INFRA_ERROR.
absl::StatusOr<VerifyResult> VerifyCandidate(const EvalTask& task, SessionInterface* reference,
                                             SessionInterface* candidate,
                                             const VerifyConfig& config, const SeedSource& seeds,
                                             bool probe, const RequestContext& context,
                                             const CallHooks& hooks = {});

// Compares a candidate's outputs with the reference's: count, dtype and
// shape, then element by element with the task's tolerance. "" when they
// agree, else one line saying where they differ. `report` (may be null)
// collects the largest errors and the first mismatch. Outputs that came as
// samples (OutputTensor::sampled_from) compare their full shapes, then the
// sampled elements.
std::string CompareOutputs(const EvalTask& task, const ToleranceOverride& tolerance,
                           const std::vector<OutputTensor>& got,
                           const std::vector<OutputTensor>& want, v1::CorrectnessReport* report);

}  // namespace crl

#endif  // CRL_SERVICES_WORKER_VERIFIER_H_
