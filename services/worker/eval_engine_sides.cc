// EvalEngine: starting a request's sides (eval_engine.h). A side's process
// comes from the format's warm pool, or is started with no lane held where
// the format's start has a step that needs none, or is started by the
// side's Start under the lease.
#include "absl/synchronization/notification.h"
#include "services/worker/eval_engine.h"

namespace crl {

std::unique_ptr<SessionInterface> EvalEngine::StartSession(const Resolved& r, Side side,
                                                           const std::string& artifact,
                                                           double budget, const Lane& lane,
                                                           const RequestContext& context,
                                                           RunnerEvent* event,
                                                           std::shared_ptr<StartedProcess> process) {
  if (metrics_) metrics_->CountRunnerStart(BackendName(r.backend));
  return r.format->Start(*r.task, {side, artifact, budget, std::move(process)}, lane, context, event);
}

EvalEngine::SessionPair EvalEngine::StartPair(const Resolved& r, const std::string& reference_artifact,
                                             const std::string& candidate_artifact, double budget,
                                             const Lane& lane, const RequestContext& context,
                                             std::shared_ptr<StartedProcess> reference_process,
                                             std::shared_ptr<StartedProcess> candidate_process) {
  SessionPair p;
  absl::Notification reference_started;
  auto start_reference = [&] {
    p.reference = StartSession(r, Side::kReference, reference_artifact, budget, lane, context, &p.reference_event,
                               reference_process);
    reference_started.Notify();
  };
  if (!starters_.Submit(start_reference).ok()) start_reference();  // every starter busy: here, first
  p.candidate = StartSession(r, Side::kCandidate, candidate_artifact, budget, lane, context, &p.candidate_event,
                             std::move(candidate_process));
  reference_started.WaitForNotification();
  return p;
}

absl::Status EvalEngine::StartProcessesOffLane(const Resolved& r, const Lane& lane, double budget,
                                               bool with_reference, LaneLease* lease,
                                               const RequestContext& context,
                                               std::shared_ptr<StartedProcess>* candidate,
                                               std::shared_ptr<StartedProcess>* reference) {
  *candidate = r.format->TakeStarted(lane);
  if (with_reference) *reference = r.format->TakeStarted(lane);
  const bool cold_candidate = !*candidate;
  const bool cold_reference = with_reference && !*reference;
  if (!cold_candidate && !cold_reference) return absl::OkStatus();
  lease->StepAside();
  // A failure here is not reported: the side's Start then starts it under
  // the lease, as it would have, and reports its own.
  RunnerEvent reference_event, candidate_event;
  absl::Notification reference_started;
  auto start_reference = [&] {
    if (cold_reference) *reference = r.format->StartOffLane(lane, budget, context, &reference_event);
    reference_started.Notify();
  };
  if (!starters_.Submit(start_reference).ok()) start_reference();
  if (cold_candidate) *candidate = r.format->StartOffLane(lane, budget, context, &candidate_event);
  reference_started.WaitForNotification();
  return lease->Rejoin(LaneUse::kShared, context, options_.lane_wait);
}

}  // namespace crl
