// crl-worker's Prometheus metrics. Labels are bounded: verdict names,
// backends, lane names (one per GPU/slot), kill reasons.
#ifndef CRL_SERVICES_WORKER_WORKER_METRICS_H_
#define CRL_SERVICES_WORKER_WORKER_METRICS_H_

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <string>

#include "crl/v1/common.pb.h"

namespace crl {

// Thread-safe (prometheus-cpp metrics are).
struct WorkerMetrics {
  explicit WorkerMetrics(prometheus::Registry* registry);

  void CountEvaluation(v1::Verdict verdict);
  void ObserveCompile(const std::string& backend, double seconds, bool cache_hit);
  void AddLaneBusy(const std::string& lane, double seconds);
  void CountRunnerStart(const std::string& backend);
  // A KernelBench side's process: taken warm from the pool or started cold.
  void CountSideStart(const std::string& lane, bool warm);
  // A verification's reference answers: recorded earlier (hit) or not.
  void CountReferenceCache(bool hit);
  // reason: timeout, seccomp, resource_limit, crash.
  void CountSandboxKill(const std::string& reason);
  // dir: "cache" (build cache objects) or "work" (task bundles).
  void ObserveDisk(const std::string& dir, int64_t bytes, int64_t evictions);

  // crl_worker_evaluations_total{verdict}
  prometheus::Family<prometheus::Counter>& evaluations;
  // crl_worker_compile_seconds{backend} (cache misses only)
  prometheus::Family<prometheus::Histogram>& compile_seconds;
  // crl_worker_build_cache_total{result="hit"|"miss"}
  prometheus::Family<prometheus::Counter>& build_cache;
  // crl_worker_queue_depth: requests waiting for a worker thread.
  prometheus::Gauge& queue_depth;
  // crl_worker_lanes_busy: lanes held now (verification or measurement).
  prometheus::Gauge& lanes_busy;
  // crl_worker_lane_busy_seconds_total{lane}
  prometheus::Family<prometheus::Counter>& lane_busy_seconds;
  // crl_worker_runner_starts_total{backend}: runner processes started
  // (every restart after a crash or CUDA error is one more).
  prometheus::Family<prometheus::Counter>& runner_starts;
  // crl_worker_side_starts_total{lane, start="warm"|"cold"}: sides
  // (KernelBench harnesses, native runners) served by a warm pool's process
  // or by one started for them.
  prometheus::Family<prometheus::Counter>& side_starts;
  // crl_worker_reference_cache_total{result="hit"|"miss"}: verifications
  // whose reference answers came from the reference cache, or ran.
  prometheus::Family<prometheus::Counter>& reference_cache;
  // crl_worker_sandbox_kills_total{reason}
  prometheus::Family<prometheus::Counter>& sandbox_kills;
  // crl_worker_disk_bytes{dir}: bytes held under the budget (disk_budget.h).
  prometheus::Family<prometheus::Gauge>& disk_bytes;
  // crl_worker_disk_budget_bytes{dir}: the byte budget (cache_max_bytes,
  // work_max_bytes), which the chart keeps below the volume's size limit.
  prometheus::Family<prometheus::Gauge>& disk_budget_bytes;
  // crl_worker_disk_evictions_total{dir}
  prometheus::Family<prometheus::Counter>& disk_evictions;
};

}  // namespace crl

#endif  // CRL_SERVICES_WORKER_WORKER_METRICS_H_
