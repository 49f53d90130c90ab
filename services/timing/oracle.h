// The timing oracle: turns raw samples from a worker lane into a speedup
// with a confidence interval and trust flags. Its numbers become rewards,
// so every decision here is explained in the response (docs/timing.md).
// Unit-tested against FakeWorkerClient (tests/unit/oracle_test.cc).
#ifndef CRL_SERVICES_TIMING_ORACLE_H_
#define CRL_SERVICES_TIMING_ORACLE_H_

#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "common/context.h"
#include "crl/v1/timing.pb.h"
#include "services/timing/timing_metrics.h"
#include "services/timing/worker_set.h"
#include "services/worker/worker_client.h"

namespace crl::timing {

// Ceilings of a device model, for the physical-floor check. 0 = unknown.
struct DeviceCeiling {
  double bytes_per_second = 0;
  double flops_per_second = 0;
};

struct OracleOptions {
  // Stopping rule (passed to the worker's MeasurePair).
  double target_rel_ci = 0.01;
  double budget_seconds = 30;
  int warmup = 5;
  int min_pairs = 20;
  int max_pairs = 400;
  int block_size = 5;
  int check_outputs_every = 5;
  // Elements of each output a check compares; larger outputs are compared
  // at this many random positions (0: the worker's default, 1,048,576;
  // eval.proto's MeasurePairRequest.checked_elements).
  int64_t checked_elements = 0;
  // Short calls are timed in batches of back-to-back calls lasting at least
  // this long on the reference (negative: one call per sample), at most
  // max_calls_per_sample calls. 0: the worker's defaults (eval.proto's
  // MeasurePairRequest: 10 ms on a GPU, 1 ms on the host; 256 calls).
  double min_sample_seconds = 0;
  int max_calls_per_sample = 0;
  // Time GPU calls as launched, not as CUDA-graph replays (eval.proto's
  // MeasurePairRequest.eager_timing); a TimeRequest can also ask for it.
  bool eager_timing = false;
  // A candidate the oracle verifies itself (a TimeRequest without an
  // artifact) keeps its verified sides this long for the first measurement
  // (EvaluateRequest.keep_for_timing_seconds; 0: not kept).
  double keep_verified_seconds = 10;
  int bootstrap_resamples = 1000;
  // Side stream: the candidate's stream time is below half its device time,
  // and its device-minus-stream gap exceeds the ordinary synchronization gap
  // (the reference's, capped below) by more than both this many seconds and
  // 20% of the candidate's time.
  double side_stream_min_gap_seconds = 5e-6;
  // Most of the reference's own gap that counts as ordinary synchronization.
  double side_stream_sync_allowance_seconds = 10e-6;
  // Noise: relative spread (MAD / median) of either side above this is
  // measured again, noise_remeasure_scale times longer (budget and pairs;
  // the budget at most noise_remeasure_max_seconds, or the first one's when
  // that is longer). Still that spread there, it is FLAG_NOISY (rewarded at
  // its interval's end nearest 1: lib/reward) when the buckets disagree or
  // the speedup's interval is wider than noise_ci_threshold (relative
  // half-width). Narrower, the speedup is that same conservative value and
  // no flag: the longer measurement pinned it down through the noise (a
  // loaded 2-core machine spreads honest calls by 10-20 %), and a prompt
  // shows it as a speedup rather than as withheld.
  double noise_threshold = 0.10;
  double noise_remeasure_scale = 4;
  double noise_remeasure_max_seconds = 60;
  double noise_ci_threshold = 0.10;
  // Implausible: speedup above this, or above jump_vs_best x the best known,
  // is measured again. The two must agree within reverify_agreement, or
  // within their own intervals' relative half-widths added when those are
  // wider, up to reverify_agreement_max (two honest host measurements of a
  // 15x candidate differ by 10-20%); the lower of the two counts, with its
  // own times and noise. Beyond that: FLAG_IMPLAUSIBLE_JUMP.
  double jump_speedup = 10;
  double jump_vs_best = 2;
  double reverify_agreement = 0.25;
  double reverify_agreement_max = 0.5;
  // Timer cross-check: the candidate's (outside - inside) time may exceed the
  // reference's by at most the largest of these allowances:
  // timer_slack_seconds, timer_slack_fraction of the reference's time.
  double timer_slack_seconds = 0.5e-3;
  double timer_slack_fraction = 0.25;
  // ... and at least this fraction of the reference's own hidden time.
  double timer_slack_overhead_fraction = 0.10;
  // CUDA-L1 bucketed aggregation.
  int buckets = 7;
  double bucket_disagreement = 0.10;
  double round_step = 0.01;
  // Device name (substring match, first hit) -> ceilings. "host" applies to
  // the host backend.
  std::vector<std::pair<std::string, DeviceCeiling>> ceilings = {
      {"H200", {4.8e12, 989e12}}, {"H100", {3.35e12, 989e12}}, {"A100", {2.0e12, 312e12}}};
  // Baselines older than this are re-measured.
  absl::Duration baseline_ttl = absl::Hours(24);
};

// Thread-safe.
class TimingOracle {
 public:
  // `workers`, `clock` and `metrics` (may be null) must outlive the oracle.
  // Each request runs on one worker of the set (worker_set.h).
  TimingOracle(OracleOptions options, WorkerSetInterface* workers, ClockInterface* clock,
               TimingMetrics* metrics = nullptr);
  // One worker.
  TimingOracle(OracleOptions options, WorkerClientInterface* worker, ClockInterface* clock,
               TimingMetrics* metrics = nullptr);

  // Times a candidate against its task's reference. Request errors (and the
  // request ending) are statuses; outcomes (INFRA_ERROR included) are in
  // the response.
  absl::StatusOr<v1::TimeResponse> Time(const v1::TimeRequest& request,
                                        const RequestContext& context);
  absl::StatusOr<v1::Baseline> GetBaseline(const v1::GetBaselineRequest& request,
                                           const RequestContext& context);

  // Records the host's memory bandwidth (measured by the caller) as the
  // host backend's ceiling.
  void SetHostCeiling(DeviceCeiling ceiling);

 private:
  struct Aggregate {
    double ref = 0, cand = 0;              // reward time (device-synchronized)
    double ref_stream = 0, cand_stream = 0;
    double ref_spread = 0, cand_spread = 0;
    double bucket_disagreement = 0;
  };
  Aggregate Summarize(const v1::MeasurePairResponse& m, v1::Aggregation aggregation) const;
  v1::MeasurePairRequest PairRequest(const v1::TimeRequest& request, const std::string& artifact,
                                     uint64_t seed) const;
  DeviceCeiling CeilingFor(const std::string& device, v1::Backend backend) const;
  // The checks each measurement of a candidate answers for (side stream,
  // hidden time, physical floor): flags and evidence into *resp.
  void CheckMeasurement(const v1::MeasurePairResponse& m, const Aggregate& a, v1::TimeResponse* resp) const;
  void RememberBaseline(const std::string& key, const v1::MeasurePairResponse& m);
  static std::string BaselineKey(const v1::Task& task, v1::Backend backend,
                                 const std::string& device);

  // Time() without the metrics bookkeeping.
  absl::StatusOr<v1::TimeResponse> Measure(const v1::TimeRequest& request,
                                           const RequestContext& context);

  const OracleOptions options_;
  std::unique_ptr<SingleWorker> single_;  // the one-worker constructor's set
  WorkerSetInterface* workers_;
  ClockInterface* clock_;
  TimingMetrics* metrics_;
  mutable absl::Mutex mu_;
  DeviceCeiling host_ceiling_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, v1::Baseline> baselines_ ABSL_GUARDED_BY(mu_);
  uint64_t seed_counter_ ABSL_GUARDED_BY(mu_) = 0x243F6A8885A308D3ull;
};

}  // namespace crl::timing

#endif  // CRL_SERVICES_TIMING_ORACLE_H_
