#include "services/orchestrator/orchestrator_metrics.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "lib/hacks/hack_case.h"
#include "lib/report/summary.h"
#include "lib/run/run_spec.h"

namespace crl::orchestrator {
namespace {

prometheus::Histogram& Histogram(prometheus::Registry* r, const char* name, const char* help,
                                 prometheus::Histogram::BucketBoundaries buckets) {
  return prometheus::BuildHistogram().Name(name).Help(help).Register(*r).Add({}, std::move(buckets));
}

std::string StateLabel(v1::RunState s) {
  std::string name = v1::RunState_Name(s);
  return absl::AsciiStrToLower(name.substr(name.rfind('_') + 1));
}

}  // namespace

OrchestratorMetrics::OrchestratorMetrics(prometheus::Registry* r)
    : runs_(prometheus::BuildGauge().Name("crl_orchestrator_runs").Help("Runs by state").Register(*r)),
      runs_ended_(prometheus::BuildCounter()
                      .Name("crl_orchestrator_runs_ended_total")
                      .Help("Runs that ended while this orchestrator ran, by final state")
                      .Register(*r)),
      candidates_(prometheus::BuildCounter()
                      .Name("crl_orchestrator_candidates_total")
                      .Help("Scored candidates by stage and outcome")
                      .Register(*r)),
      rewards_(Histogram(r, "crl_orchestrator_reward", "Rewards given (withheld and infrastructure failures are none)",
                         {-1, -0.5, 0, 0.25, 0.5, 1, 1.5, 2, 3})),
      speedups_(Histogram(r, "crl_orchestrator_speedup", "Speedups of verified candidates with a trusted timing",
                          {0.5, 0.8, 1, 1.25, 1.5, 2, 4, 8})),
      best_speedup_(prometheus::BuildGauge()
                        .Name("crl_orchestrator_best_speedup")
                        .Help("Best trusted speedup seen since the orchestrator started")
                        .Register(*r)
                        .Add({})),
      groups_in_flight_(prometheus::BuildGauge()
                            .Name("crl_orchestrator_groups_in_flight")
                            .Help("Groups being sampled or scored")
                            .Register(*r)
                            .Add({})),
      copies_scored_(prometheus::BuildCounter()
                         .Name("crl_orchestrator_copies_scored_total")
                         .Help("Candidates that took the evaluation and timing of an earlier copy of the same "
                               "program in their group")
                         .Register(*r)
                         .Add({})),
      dispatch_seconds_(Histogram(r, "crl_orchestrator_dispatch_seconds",
                                  "Evaluate calls to workers, from dispatch to verdict (waiting for a slot included)",
                                  {0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300})),
      store_seconds_(Histogram(r, "crl_orchestrator_store_write_seconds",
                               "A scored candidate's store writes (variant, run counters, event)",
                               {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5})),
      worker_failures_(prometheus::BuildCounter()
                           .Name("crl_orchestrator_worker_failures_total")
                           .Help("Candidates a worker failed on our side, by reason (unreachable, rpc_error, "
                                 "infra_error)")
                           .Register(*r)),
      hacks_(prometheus::BuildCounter()
                 .Name("crl_orchestrator_hacks_total")
                 .Help("Candidates recorded in the hack database, by what caught them (docs/hacks.md)")
                 .Register(*r)),
      judgements_(prometheus::BuildCounter()
                      .Name("crl_orchestrator_judgements_total")
                      .Help("Suspicious rewards judged, by decision (honest, cheat, undecided)")
                      .Register(*r)) {
  for (v1::RunState s : {v1::RUN_STATE_QUEUED, v1::RUN_STATE_RUNNING, v1::RUN_STATE_SUCCEEDED,
                         v1::RUN_STATE_FAILED, v1::RUN_STATE_CANCELLED}) {
    runs_.Add({{"state", StateLabel(s)}}).Set(0);
  }
  for (v1::RunState s : {v1::RUN_STATE_SUCCEEDED, v1::RUN_STATE_FAILED, v1::RUN_STATE_CANCELLED}) {
    runs_ended_.Add({{"state", StateLabel(s)}});
  }
}

bool OrchestratorMetrics::SetState(const std::string& run_id, v1::RunState state) {
  auto [it, fresh] = states_.emplace(run_id, state);
  if (!fresh && it->second == state) return false;
  const bool ended = !fresh && run::RunEnded(it->second);
  if (!fresh) runs_.Add({{"state", StateLabel(it->second)}}).Decrement();
  runs_.Add({{"state", StateLabel(state)}}).Increment();
  it->second = state;
  return run::RunEnded(state) && !ended;
}

void OrchestratorMetrics::ObserveRun(const v1::Run& run) {
  absl::MutexLock lock(&mu_);
  SetState(run.run_id(), run.state());
}

void OrchestratorMetrics::ObserveEvent(const v1::RunEvent& e) {
  if (e.kind() == "judged") {
    // A held reward decided later (RunExecutor::RejudgeHeld): the judgement,
    // and the hack a cheat makes; the candidate itself was counted when scored,
    // and the run's state is not news (an ended run may be re-judged).
    const v1::Variant& v = e.variant();
    for (const auto& kind : hacks::Kinds(v)) hacks_.Add({{"kind", kind}}).Increment();
    judgements_.Add({{"decision", v.judgement().decision()}}).Increment();
    return;
  }
  {
    absl::MutexLock lock(&mu_);
    const v1::RunState state = e.run().run_id().empty() ? e.state() : e.run().state();
    if (SetState(e.run_id(), state)) runs_ended_.Add({{"state", StateLabel(state)}}).Increment();
  }
  if (e.kind() != "variant") return;
  const v1::Variant& v = e.variant();
  const report::Outcome o = report::OutcomeOf(v);
  candidates_.Add({{"stage", v.stage()}, {"outcome", report::OutcomeLabel(o)}}).Increment();
  if (v.reward().status() == v1::REWARD_STATUS_OK && o != report::Outcome::kInfra) rewards_.Observe(v.reward().reward());
  if (o == report::Outcome::kVerified || o == report::Outcome::kFaster) {
    speedups_.Observe(v.speedup());
    best_speedup_.Set(std::max(best_speedup_.Value(), v.speedup()));
  }
  for (const auto& kind : hacks::Kinds(v)) hacks_.Add({{"kind", kind}}).Increment();
  if (!v.judgement().decision().empty()) judgements_.Add({{"decision", v.judgement().decision()}}).Increment();
}

void OrchestratorMetrics::CountWorkerFailure(const std::string& reason) {
  worker_failures_.Add({{"reason", reason}}).Increment();
}

}  // namespace crl::orchestrator
