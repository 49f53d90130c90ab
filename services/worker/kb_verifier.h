// The correctness protocol for KernelBench-format candidates: reference and
// candidate in two harness processes on one lane, secret seeds, every
// judgement made here from the bytes they return (docs/kernelbench.md).
#ifndef CRL_SERVICES_WORKER_KB_VERIFIER_H_
#define CRL_SERVICES_WORKER_KB_VERIFIER_H_

#include <string>
#include <vector>

#include "crl/v1/common.pb.h"
#include "services/worker/kb_session.h"
#include "services/worker/verifier.h"

namespace crl {

struct KbVerifyResult {
  v1::Verdict verdict = v1::VERDICT_UNSPECIFIED;
  v1::CorrectnessReport report;
  std::string device_name;
  // GLOBAL_FLAGS, NO_CUSTOM_KERNEL, DEGENERATE_TASK; evidence line by line.
  std::vector<v1::Flag> flags;
  std::vector<std::string> flag_evidence;
  bool custom_kernel = false;
  // Set when probes ran: the probe that passed every trial ("" if none).
  bool probed = false;
  std::string degenerate_probe;
};

struct KbVerifyInputs {
  KbTask task;
  std::string candidate_path;
  std::string manifest_path;
  // Run the degenerate-task probes alongside the reference (the engine
  // caches the outcome per task and device).
  bool probe = false;
};

// Blocks; the caller holds `lane` exclusively.
KbVerifyResult VerifyKbCandidate(const KbVerifyInputs& in, const Lane& lane,
                                 const RunnerOptions& runner, const KbOptions& kb,
                                 const VerifyConfig& config, const SeedSource& seeds);

}  // namespace crl

#endif  // CRL_SERVICES_WORKER_KB_VERIFIER_H_
