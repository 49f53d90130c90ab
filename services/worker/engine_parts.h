// Pieces EvalEngine's two source files share (eval_engine.cc: compile and
// verify; eval_engine_measure.cc: measure). Internal to the worker.
#ifndef CRL_SERVICES_WORKER_ENGINE_PARTS_H_
#define CRL_SERVICES_WORKER_ENGINE_PARTS_H_

#include <memory>
#include <string>
#include <utility>

#include "services/worker/eval_engine.h"

namespace crl {

inline v1::Backend ToProto(BackendKind b) {
  return b == BackendKind::kCuda ? v1::BACKEND_CUDA : v1::BACKEND_HOST;
}

// What a failed call means: the reference belongs to the task, so its
// failure is ours (INFRA_ERROR), never the candidate's.
inline v1::Verdict VerdictFor(Side side, const RunnerEvent& event) {
  return side == Side::kReference ? v1::VERDICT_INFRA_ERROR : event.verdict;
}

// Freezes both sides of a pair, or lets them go on (either may be null).
inline void FreezeSides(SessionInterface* reference, SessionInterface* candidate, bool frozen) {
  if (reference) reference->Freeze(frozen);
  if (candidate) candidate->Freeze(frozen);
}

// Counts a lease in crl_worker_lanes_busy while it lives (the lane's busy
// seconds are the pool's: LanePoolOptions::on_idle).
class LeaseGauge {
 public:
  explicit LeaseGauge(WorkerMetrics* metrics) : metrics_(metrics) {
    if (metrics_) metrics_->lanes_busy.Increment();
  }
  ~LeaseGauge() {
    if (metrics_) metrics_->lanes_busy.Decrement();
  }

 private:
  WorkerMetrics* metrics_;
};

// A verified candidate's sides, kept on their lane with its lease for the
// measurement that names them (EvalEngine::Keep: frozen, the lease stepped
// aside, unless EngineOptions::step_aside_for_timing is off; the reference
// is null when the candidate was verified against recorded answers); also
// a finished evaluation's sides while they end (EvalEngine::Retire).
struct EvalEngine::KeptPair {
  KeptPair(LaneLease l, WorkerMetrics* metrics) : lease(std::move(l)), busy(metrics) {}
  ~KeptPair() {
    // The processes end before the lane is let go: nothing a candidate
    // left running may sit beside the next lease's timing. Frozen sides
    // (the lease aside) are killed as they are.
    if (candidate) candidate->Close();
    if (reference) reference->Close();
  }
  LaneLease lease;
  LeaseGauge busy;
  std::shared_ptr<const EvalTask> task;  // sessions may refer to it
  std::string reference_artifact, library_path;
  std::unique_ptr<SessionInterface> reference, candidate;
  absl::Time expires;
};

}  // namespace crl

#endif  // CRL_SERVICES_WORKER_ENGINE_PARTS_H_
