// The correctness protocol (docs/worker.md): several trials with secret seeds
// over every input distribution and size set, reference and candidate in two
// separate runner processes, every judgement made here from the bytes they
// return.
#ifndef CRL_SERVICES_WORKER_VERIFIER_H_
#define CRL_SERVICES_WORKER_VERIFIER_H_

#include <cstdint>
#include <functional>
#include <string>

#include "crl/v1/common.pb.h"
#include "services/worker/runner_client.h"
#include "services/worker/task.h"

namespace crl {

struct VerifyConfig {
  // Trials; raised to cover every (size set, distribution) pair, capped at 16.
  int trials = 5;
  // Re-runs of the first trial on fresh allocations; outputs must be
  // bit-identical (catches races and reads of uninitialised memory).
  int determinism_reruns = 1;
  // Per-call limit for the candidate; the reference gets the same.
  double call_timeout_seconds = 20;
  // Tolerance overrides (<= 0: the task's).
  double atol = 0;
  double rtol = 0;
};

// Secret seeds. Production draws from the OS CSPRNG; tests inject a fixed one.
using SeedSource = std::function<uint64_t()>;
SeedSource SecureSeedSource();

struct VerifyResult {
  v1::Verdict verdict = v1::VERDICT_UNSPECIFIED;
  v1::CorrectnessReport report;
  std::string device_name;
};

// Runs the protocol for one candidate library against the reference library
// on `lane`. Blocks; the caller holds the lane exclusively.
VerifyResult VerifyCandidate(const NativeTask& task, const Lane& lane,
                             const std::string& reference_library,
                             const std::string& candidate_library, const RunnerOptions& runner,
                             const VerifyConfig& config, const SeedSource& seeds);

}  // namespace crl

#endif  // CRL_SERVICES_WORKER_VERIFIER_H_
