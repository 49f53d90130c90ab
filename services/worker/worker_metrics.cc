#include "services/worker/worker_metrics.h"

#include "common/metrics.h"
#include "lib/reward/names.h"

namespace crl {

WorkerMetrics::WorkerMetrics(prometheus::Registry* r)
    : evaluations(prometheus::BuildCounter()
                      .Name("crl_worker_evaluations_total")
                      .Help("Evaluations finished, by verdict")
                      .Register(*r)),
      compile_seconds(prometheus::BuildHistogram()
                          .Name("crl_worker_compile_seconds")
                          .Help("Wall time of compiles that missed the cache")
                          .Register(*r)),
      build_cache(prometheus::BuildCounter()
                      .Name("crl_worker_build_cache_total")
                      .Help("Build cache lookups, by result (hit or miss)")
                      .Register(*r)),
      queue_depth(prometheus::BuildGauge()
                      .Name("crl_worker_queue_depth")
                      .Help("Requests waiting for a worker thread")
                      .Register(*r)
                      .Add({})),
      lanes_busy(prometheus::BuildGauge()
                     .Name("crl_worker_lanes_busy")
                     .Help("Lanes held now by verification or measurement")
                     .Register(*r)
                     .Add({})),
      lane_busy_seconds(prometheus::BuildCounter()
                            .Name("crl_worker_lane_busy_seconds_total")
                            .Help("Seconds each lane was held by verification or measurement")
                            .Register(*r)),
      runner_starts(prometheus::BuildCounter()
                        .Name("crl_worker_runner_starts_total")
                        .Help("Sandboxed runner processes started, by backend")
                        .Register(*r)),
      side_starts(prometheus::BuildCounter()
                      .Name("crl_worker_side_starts_total")
                      .Help("Sides by how their process started (warm: from a warm pool of harness or runner processes)")
                      .Register(*r)),
      reference_cache(prometheus::BuildCounter()
                          .Name("crl_worker_reference_cache_total")
                          .Help("Verifications by where the reference's answers came from (hit: the reference cache)")
                          .Register(*r)),
      sandbox_kills(prometheus::BuildCounter()
                        .Name("crl_worker_sandbox_kills_total")
                        .Help("Sandboxed processes that ended badly, by reason")
                        .Register(*r)),
      disk_bytes(prometheus::BuildGauge()
                     .Name("crl_worker_disk_bytes")
                     .Help("Bytes of the build cache (dir=cache) and unpacked task bundles (dir=work)")
                     .Register(*r)),
      disk_budget_bytes(prometheus::BuildGauge()
                            .Name("crl_worker_disk_budget_bytes")
                            .Help("The byte budget of the build cache (dir=cache) and of unpacked task bundles "
                                  "(dir=work): entries are evicted above it")
                            .Register(*r)),
      disk_evictions(prometheus::BuildCounter()
                         .Name("crl_worker_disk_evictions_total")
                         .Help("Entries evicted to keep a directory under its byte budget")
                         .Register(*r)) {}

void WorkerMetrics::ObserveDisk(const std::string& dir, int64_t bytes, int64_t evictions) {
  disk_bytes.Add({{"dir", dir}}).Set(static_cast<double>(bytes));
  prometheus::Counter& c = disk_evictions.Add({{"dir", dir}});
  if (static_cast<double>(evictions) > c.Value()) c.Increment(static_cast<double>(evictions) - c.Value());
}

void WorkerMetrics::CountEvaluation(v1::Verdict verdict) {
  evaluations.Add({{"verdict", LabelValue(VerdictShortName(verdict))}}).Increment();
}

void WorkerMetrics::ObserveCompile(const std::string& backend, double seconds, bool cache_hit) {
  build_cache.Add({{"result", cache_hit ? "hit" : "miss"}}).Increment();
  if (!cache_hit) compile_seconds.Add({{"backend", backend}}, LatencyBuckets()).Observe(seconds);
}

void WorkerMetrics::AddLaneBusy(const std::string& lane, double seconds) {
  lane_busy_seconds.Add({{"lane", lane}}).Increment(seconds);
}

void WorkerMetrics::CountRunnerStart(const std::string& backend) {
  runner_starts.Add({{"backend", backend}}).Increment();
}

void WorkerMetrics::CountSideStart(const std::string& lane, bool warm) {
  side_starts.Add({{"lane", lane}, {"start", warm ? "warm" : "cold"}}).Increment();
}

void WorkerMetrics::CountReferenceCache(bool hit) {
  reference_cache.Add({{"result", hit ? "hit" : "miss"}}).Increment();
}

void WorkerMetrics::CountSandboxKill(const std::string& reason) {
  sandbox_kills.Add({{"reason", reason}}).Increment();
}

}  // namespace crl
