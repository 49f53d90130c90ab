// crl-orchestrator's Prometheus metrics, read back from the registry.
#include <prometheus/registry.h>

#include <catch2/catch.hpp>
#include <map>
#include <string>

#include "services/orchestrator/orchestrator_metrics.h"

namespace crl::orchestrator {
namespace {

// family/label-value -> value, for families with one label.
std::map<std::string, double> Read(prometheus::Registry& registry, const std::string& name) {
  std::map<std::string, double> out;
  for (const auto& family : registry.Collect()) {
    if (family.name != name) continue;
    for (const auto& m : family.metric) {
      out[m.label.at(0).value] = family.type == prometheus::MetricType::Counter ? m.counter.value : m.gauge.value;
    }
  }
  return out;
}

v1::RunEvent StateEvent(const std::string& run_id, v1::RunState state) {
  v1::RunEvent e;
  e.set_run_id(run_id);
  e.set_kind("state");
  e.set_state(state);
  return e;
}

TEST_CASE("runs that end are counted once, as they end, never from the store at start", "[orchestrator][metrics]") {
  prometheus::Registry registry;
  OrchestratorMetrics metrics(&registry);
  // At start: a run that failed before this orchestrator ran is a state,
  // not an ending (CrlRunFailed would fire on every restart otherwise).
  v1::Run old;
  old.set_run_id("old");
  old.set_state(v1::RUN_STATE_FAILED);
  metrics.ObserveRun(old);
  CHECK(Read(registry, "crl_orchestrator_runs_ended_total") ==
        std::map<std::string, double>{{"cancelled", 0}, {"failed", 0}, {"succeeded", 0}});
  CHECK(Read(registry, "crl_orchestrator_runs")["failed"] == 1);

  for (v1::RunState s : {v1::RUN_STATE_QUEUED, v1::RUN_STATE_RUNNING, v1::RUN_STATE_FAILED, v1::RUN_STATE_FAILED}) {
    metrics.ObserveEvent(StateEvent("r1", s));
  }
  metrics.ObserveEvent(StateEvent("r2", v1::RUN_STATE_QUEUED));
  metrics.ObserveEvent(StateEvent("r2", v1::RUN_STATE_SUCCEEDED));
  CHECK(Read(registry, "crl_orchestrator_runs_ended_total") ==
        std::map<std::string, double>{{"cancelled", 0}, {"failed", 1}, {"succeeded", 1}});
  const auto runs = Read(registry, "crl_orchestrator_runs");
  CHECK(runs.at("failed") == 2);
  CHECK(runs.at("succeeded") == 1);
  CHECK(runs.at("running") == 0);
  CHECK(runs.at("queued") == 0);
}

TEST_CASE("worker failures are counted by reason, never by a pod's address", "[orchestrator][metrics]") {
  prometheus::Registry registry;
  OrchestratorMetrics metrics(&registry);
  metrics.CountWorkerFailure("unreachable");
  metrics.CountWorkerFailure("unreachable");
  metrics.CountWorkerFailure("infra_error");
  CHECK(Read(registry, "crl_orchestrator_worker_failures_total") ==
        std::map<std::string, double>{{"infra_error", 1}, {"unreachable", 2}});
  for (const auto& family : registry.Collect()) {
    for (const auto& m : family.metric) {
      for (const auto& label : m.label) CHECK(label.name != "worker");
    }
  }
}

}  // namespace
}  // namespace crl::orchestrator
