// The correctness protocol (docs/worker.md, docs/kernelbench.md), written once
// for every task format: trials with secret seeds planned by the task, the
// reference and the candidate in two processes on one lane, and every
// judgement made here from the bytes they return (outputs, tolerance,
// violations, aliasing, determinism, degenerate-task probes).
#ifndef CRL_SERVICES_WORKER_VERIFY_VERIFIER_H_
#define CRL_SERVICES_WORKER_VERIFY_VERIFIER_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/context.h"
#include "crl/v1/common.pb.h"
#include "services/worker/formats/task_format.h"

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
  // On a degenerate task (a trivial solution passes the tolerance), a
  // candidate is judged by its distance from the reference against the
  // trivial solution's: at most this share of it is rewarded, this close to
  // the trivial solution itself is WRONG_ANSWER (JudgeDegenerate).
  double degenerate_margin = 0.1;
};

// How a verified candidate stood to one trivial solution over the probed
// trials (VerifyResult::probes).
struct ProbeStanding {
  int trials = 0;  // probed trials where this trivial solution could be asked
  int passed = 0;  // of them, trials where it passed the task's tolerance
  bool passes_all = false;  // passed every one: the task is degenerate for it
  // On every trial where it passed, the candidate was within
  // `degenerate_margin` of the trivial solution's distance from the
  // reference (L2 over the output).
  bool separated = true;
  // Trials where the candidate was that close to the trivial solution
  // itself, and the trivial solution's error was a real share of the
  // tolerance (not the reference's rounding).
  int matched = 0;
  // Largest ||candidate - reference|| / ||trivial - reference|| where it
  // passed (infinite where the reference is the trivial solution).
  double worst_ratio = 0;
  // Every such trial's outputs could be measured (whole, finite).
  bool measurable = true;
};

struct VerifyResult {
  v1::Verdict verdict = v1::VERDICT_UNSPECIFIED;
  v1::CorrectnessReport report;
  // GLOBAL_FLAGS, NO_CUSTOM_KERNEL; evidence line by line.
  std::vector<v1::Flag> flags;
  std::vector<std::string> flag_evidence;
  bool custom_kernel = false;
  // Set when probes ran: the candidate against each trivial solution, by
  // name ("zeros", "mean", "identity", "memorised": the previous trial's
  // reference output, "memorised within 10x the tolerance": outputs nearly
  // independent of the inputs), and the names that passed every probed
  // trial (the task is degenerate when there is one).
  bool probed = false;
  std::map<std::string, ProbeStanding> probes;
  std::vector<std::string> degenerate_probes;
  // Trials the task planned (some may have been skipped or not reached).
  size_t planned_trials = 0;
};

// What a verified candidate gets on a task that the trivial solutions
// `degenerate` pass (docs/kernelbench.md, "Degenerate tasks").
struct DegenerateJudgement {
  enum Kind {
    kRewarded,  // measurably closer to the reference than every one of them
    kTrivial,   // one of them, near enough: WRONG_ANSWER
    kFlagged,   // neither can be told: OK with FLAG_DEGENERATE_TASK
  };
  Kind kind = kFlagged;
  std::string message;  // why, for people
};
// `probes`: this candidate's standings (VerifyResult::probes); a name in
// `degenerate` without one cannot be told apart (kFlagged).
DegenerateJudgement JudgeDegenerate(const std::string& task, const std::vector<std::string>& degenerate,
                                    const std::map<std::string, ProbeStanding>& probes, double margin);

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

#endif  // CRL_SERVICES_WORKER_VERIFY_VERIFIER_H_
