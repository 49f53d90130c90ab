// crl-orchestrator's Prometheus metrics: runs by state, what became of the
// candidates (by stage and outcome), rewards and trusted speedups, groups in
// flight, how long dispatch to a worker and store writes take, worker
// failures, hacks caught by kind and judge decisions. Labels are bounded:
// state, stage, outcome (lib/report's classification), reason (three), kind
// (lib/hacks' fixed list), decision (three). No label names a pod: workers
// come and go, and each worker's own metrics carry its pod.
#ifndef CRL_SERVICES_ORCHESTRATOR_ORCHESTRATOR_METRICS_H_
#define CRL_SERVICES_ORCHESTRATOR_ORCHESTRATOR_METRICS_H_

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "crl/v1/orchestrator.pb.h"

namespace crl::orchestrator {

// Thread-safe.
class OrchestratorMetrics {
 public:
  explicit OrchestratorMetrics(prometheus::Registry* registry);

  // Every stored event passes here (the orchestrator's Notify): run states,
  // and each scored candidate.
  void ObserveEvent(const v1::RunEvent& event);
  // A run as stored (the orchestrator's start: runs that ended before it).
  void ObserveRun(const v1::Run& run);
  void ObserveDispatch(double seconds) { dispatch_seconds_.Observe(seconds); }
  void ObserveStoreWrite(double seconds) { store_seconds_.Observe(seconds); }
  // A worker failed a candidate: `reason` is "unreachable" (the call never
  // reached one), "rpc_error" (it answered with an error) or "infra_error"
  // (an INFRA_ERROR verdict).
  void CountWorkerFailure(const std::string& reason);
  // A candidate took the scoring of an earlier copy of its program in its
  // group instead of being evaluated and timed (program_share.h).
  void CountCopyScored() { copies_scored_.Increment(); }
  void GroupStarted() { groups_in_flight_.Increment(); }
  void GroupFinished() { groups_in_flight_.Decrement(); }

 private:
  prometheus::Family<prometheus::Gauge>& runs_;                  // crl_orchestrator_runs{state}
  prometheus::Family<prometheus::Counter>& runs_ended_;          // crl_orchestrator_runs_ended_total{state}
  prometheus::Family<prometheus::Counter>& candidates_;          // crl_orchestrator_candidates_total{stage,outcome}
  prometheus::Histogram& rewards_;                               // crl_orchestrator_reward
  prometheus::Histogram& speedups_;                              // crl_orchestrator_speedup (trusted)
  prometheus::Gauge& best_speedup_;                              // crl_orchestrator_best_speedup
  prometheus::Gauge& groups_in_flight_;                          // crl_orchestrator_groups_in_flight
  prometheus::Counter& copies_scored_;                           // crl_orchestrator_copies_scored_total
  prometheus::Histogram& dispatch_seconds_;                      // crl_orchestrator_dispatch_seconds
  prometheus::Histogram& store_seconds_;                         // crl_orchestrator_store_write_seconds
  prometheus::Family<prometheus::Counter>& worker_failures_;     // crl_orchestrator_worker_failures_total{reason}
  prometheus::Family<prometheus::Counter>& hacks_;               // crl_orchestrator_hacks_total{kind}
  prometheus::Family<prometheus::Counter>& judgements_;          // crl_orchestrator_judgements_total{decision}
  // True when this moves the run into an ended state.
  bool SetState(const std::string& run_id, v1::RunState state) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Mutex mu_;
  std::map<std::string, v1::RunState> states_ ABSL_GUARDED_BY(mu_);
};

}  // namespace crl::orchestrator

#endif  // CRL_SERVICES_ORCHESTRATOR_ORCHESTRATOR_METRICS_H_
