#include "services/timing/oracle.h"
#include "common/status.h"

#include <optional>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/reward/names.h"
#include "lib/reward/rewards.h"
#include "lib/stats/stats.h"

namespace crl::timing {
namespace {

using stats::BootstrapSpeedup;
using stats::BucketedEstimate;
using stats::Median;
using stats::RelativeSpread;
using stats::RoundTowardOne;
using stats::SpeedupInterval;
using stats::TrimmedMean;

std::vector<double> DeviceTimes(const google::protobuf::RepeatedPtrField<v1::TimingSample>& s) {
  std::vector<double> v;
  for (const auto& x : s) v.push_back(x.device_sync_seconds());
  return v;
}

std::vector<double> StreamTimes(const google::protobuf::RepeatedPtrField<v1::TimingSample>& s) {
  std::vector<double> v;
  for (const auto& x : s) v.push_back(x.stream_event_seconds());
  return v;
}

// Per pair: the worker's round trip minus the runner's own account.
std::vector<double> HiddenTimes(const google::protobuf::RepeatedPtrField<v1::TimingSample>& s,
                                const google::protobuf::RepeatedField<double>& outside) {
  std::vector<double> v;
  for (int i = 0; i < s.size() && i < outside.size(); ++i) {
    v.push_back(outside[i] - s[i].device_sync_seconds());
  }
  return v;
}

std::string Ms(double seconds) { return absl::StrFormat("%.4g ms", seconds * 1e3); }

// Raises `f` (once) with its evidence line.
void Flag(v1::TimeResponse* resp, v1::Flag f, const std::string& evidence) {
  AddFlag(resp->mutable_flags(), f);
  resp->add_flag_evidence(absl::StrCat(v1::Flag_Name(f), ": ", evidence));
}

}  // namespace

TimingOracle::TimingOracle(OracleOptions options, WorkerSetInterface* workers, ClockInterface* clock,
                           TimingMetrics* metrics)
    : options_(std::move(options)), workers_(workers), clock_(clock), metrics_(metrics) {}

TimingOracle::TimingOracle(OracleOptions options, WorkerClientInterface* worker,
                           ClockInterface* clock, TimingMetrics* metrics)
    : options_(std::move(options)),
      single_(std::make_unique<SingleWorker>(worker)),
      workers_(single_.get()),
      clock_(clock),
      metrics_(metrics) {}

void TimingOracle::SetHostCeiling(DeviceCeiling ceiling) {
  absl::MutexLock lock(&mu_);
  host_ceiling_ = ceiling;
}

DeviceCeiling TimingOracle::CeilingFor(const std::string& device, v1::Backend backend) const {
  if (backend == v1::BACKEND_HOST) {
    absl::MutexLock lock(&mu_);
    return host_ceiling_;
  }
  for (const auto& [name, ceiling] : options_.ceilings) {
    if (device.find(name) != std::string::npos) return ceiling;
  }
  return {};
}

std::string TimingOracle::BaselineKey(const v1::Task& task, v1::Backend backend,
                                      const std::string& device) {
  std::string id = task.path();
  if (id.empty()) {
    for (const auto& f : task.files()) absl::StrAppend(&id, f.path(), ":", f.content().size(), ";");
  }
  return absl::StrCat(id, "|", static_cast<int>(backend), "|", device);
}

v1::MeasurePairRequest TimingOracle::PairRequest(const v1::TimeRequest& request,
                                                 const std::string& artifact,
                                                 uint64_t seed) const {
  v1::MeasurePairRequest m;
  *m.mutable_task() = request.task();
  m.set_backend(request.backend() != v1::BACKEND_UNSPECIFIED ? request.backend()
                                                             : request.candidate().backend());
  m.set_candidate_artifact_id(artifact);
  m.set_warmup(options_.warmup);
  m.set_min_pairs(options_.min_pairs);
  m.set_max_pairs(options_.max_pairs);
  m.set_block_size(options_.block_size);
  m.set_target_rel_ci(request.target_rel_ci() > 0 ? request.target_rel_ci()
                                                  : options_.target_rel_ci);
  m.set_budget_seconds(request.budget_seconds() > 0 ? request.budget_seconds()
                                                    : options_.budget_seconds);
  m.set_check_outputs_every(options_.check_outputs_every);
  m.set_checked_elements(options_.checked_elements);
  m.set_min_sample_seconds(request.min_sample_seconds() != 0 ? request.min_sample_seconds()
                                                             : options_.min_sample_seconds);
  m.set_max_calls_per_sample(request.max_calls_per_sample() > 0 ? request.max_calls_per_sample()
                                                                : options_.max_calls_per_sample);
  m.set_eager_timing(request.eager_timing() || options_.eager_timing);
  m.set_seed(seed);
  return m;
}

TimingOracle::Aggregate TimingOracle::Summarize(const v1::MeasurePairResponse& m,
                                                v1::Aggregation aggregation) const {
  Aggregate a;
  std::vector<double> ref = DeviceTimes(m.reference_samples());
  std::vector<double> cand = DeviceTimes(m.candidate_samples());
  switch (aggregation) {
    case v1::AGGREGATION_TRIMMED_MEAN:
      a.ref = TrimmedMean(ref, 0.1);
      a.cand = TrimmedMean(cand, 0.1);
      break;
    case v1::AGGREGATION_BUCKETED: {
      double dr = 0, dc = 0;
      a.ref = BucketedEstimate(ref, options_.buckets, &dr);
      a.cand = BucketedEstimate(cand, options_.buckets, &dc);
      a.bucket_disagreement = std::max(dr, dc);
      break;
    }
    default:
      a.ref = Median(ref);
      a.cand = Median(cand);
  }
  a.ref_stream = Median(StreamTimes(m.reference_samples()));
  a.cand_stream = Median(StreamTimes(m.candidate_samples()));
  a.ref_spread = RelativeSpread(ref);
  a.cand_spread = RelativeSpread(cand);
  return a;
}

void TimingOracle::RememberBaseline(const std::string& key, const v1::MeasurePairResponse& m) {
  std::vector<double> ref = DeviceTimes(m.reference_samples());
  if (ref.empty()) return;
  v1::Baseline b;
  double sum = 0, sq = 0;
  for (double x : ref) {
    sum += x;
    sq += x * x;
  }
  double mean = sum / ref.size();
  b.set_mean_seconds(mean);
  b.set_std_seconds(std::sqrt(std::max(0.0, sq / ref.size() - mean * mean)));
  b.set_min_seconds(*std::min_element(ref.begin(), ref.end()));
  b.set_max_seconds(*std::max_element(ref.begin(), ref.end()));
  b.set_num_trials(static_cast<int>(ref.size()));
  b.set_device_name(m.device_name());
  b.set_measured_at(absl::ToUnixSeconds(clock_->Now()));
  absl::MutexLock lock(&mu_);
  baselines_[key] = b;
}

absl::StatusOr<v1::TimeResponse> TimingOracle::Time(const v1::TimeRequest& request,
                                                    const RequestContext& context) {
  absl::StatusOr<v1::TimeResponse> result = Measure(request, context);
  if (result.ok() && metrics_) metrics_->Observe(*result);
  return result;
}

absl::StatusOr<v1::TimeResponse> TimingOracle::Measure(const v1::TimeRequest& request,
                                                       const RequestContext& context) {
  v1::TimeResponse resp;
  // Every call of this request on one worker: the one that built the
  // artifact, when the caller says which (worker_set.h).
  CRL_ASSIGN_OR_RETURN(WorkerClientInterface* worker, workers_->Pick(request.worker()));
  std::string artifact = request.artifact_id();
  // The sides the candidate's verification kept, for the first measurement.
  std::string kept_pair = request.kept_pair();
  // Builds (or finds) the candidate on this worker: when no artifact is
  // given, or the given one is not in this worker's cache (evicted, or
  // built elsewhere).
  auto build = [&]() -> absl::StatusOr<std::optional<v1::TimeResponse>> {
    if (!request.has_candidate() || request.candidate().source().empty()) {
      return absl::InvalidArgumentError("artifact_id: empty or unknown to the worker, and no candidate to evaluate");
    }
    v1::EvaluateRequest e;
    *e.mutable_task() = request.task();
    *e.mutable_candidate() = request.candidate();
    e.set_keep_for_timing_seconds(options_.keep_verified_seconds);
    if (request.backend() != v1::BACKEND_UNSPECIFIED) {
      e.mutable_candidate()->set_backend(request.backend());
    }
    auto ev = worker->Evaluate(e, context);
    if (!ev.ok()) return ev.status();
    if (ev->verdict() != v1::VERDICT_OK) {
      // Only verified candidates are timed.
      resp.set_verdict(ev->verdict());
      resp.set_stop_reason(v1::STOP_REASON_ERROR);
      for (const auto& msg : ev->messages()) resp.add_flag_evidence(msg);
      return std::optional<v1::TimeResponse>(resp);
    }
    artifact = ev->artifact_id();
    kept_pair = ev->kept_pair();
    return std::optional<v1::TimeResponse>();
  };
  if (artifact.empty()) {
    CRL_ASSIGN_OR_RETURN(std::optional<v1::TimeResponse> refused, build());
    if (refused) return *refused;
  }
  auto next_seed = [this] {
    absl::MutexLock lock(&mu_);
    seed_counter_ = seed_counter_ * 6364136223846793005ull + 1442695040888963407ull;
    return seed_counter_;
  };
  int output_checks = 0, output_mismatches = 0;
  std::string mismatch_detail;
  auto measure = [&](double scale = 1) -> absl::StatusOr<v1::MeasurePairResponse> {
    v1::MeasurePairRequest pair = PairRequest(request, artifact, next_seed());
    if (scale > 1 && std::isfinite(scale)) {
      const double budget = pair.budget_seconds();
      pair.set_budget_seconds(std::max(budget, std::min(budget * scale, options_.noise_remeasure_max_seconds)));
      const int pairs = pair.max_pairs() > 0 ? pair.max_pairs() : kDefaultMaxPairs;
      pair.set_max_pairs(static_cast<int>(std::min(100000.0, pairs * scale)));
    }
    pair.set_kept_pair(std::exchange(kept_pair, ""));  // the first measurement only
    auto m = worker->MeasurePair(pair, context);
    resp.set_measurements(resp.measurements() + 1);
    if (m.ok()) {
      // Every measurement's output checks count, whichever one's times are
      // reported.
      output_checks += m->output_checks();
      output_mismatches += m->output_mismatches();
      if (mismatch_detail.empty()) mismatch_detail = m->output_mismatch_detail();
      if (resp.measurements() == 1) resp.set_kept_pair_used(m->kept_pair_used());
      resp.set_measure_seconds(resp.measure_seconds() + m->lane_seconds());
      resp.set_start_seconds(resp.start_seconds() + m->start_seconds());
      resp.set_lane_wait_seconds(resp.lane_wait_seconds() + m->lane_wait_seconds());
    }
    return m;
  };
  auto failed = [&](const v1::MeasurePairResponse& m) {
    resp.set_verdict(m.verdict());
    resp.set_stop_reason(v1::STOP_REASON_ERROR);
    for (const auto& msg : m.messages()) resp.add_flag_evidence(msg);
    return resp;
  };
  auto flag = [&](v1::Flag f, const std::string& evidence) { Flag(&resp, f, evidence); };

  auto m = measure();
  if (!m.ok() && m.status().code() == absl::StatusCode::kNotFound && !request.artifact_id().empty() &&
      request.has_candidate()) {
    CRL_ASSIGN_OR_RETURN(std::optional<v1::TimeResponse> refused, build());
    if (refused) return *refused;
    m = measure();
  }
  if (!m.ok()) return m.status();
  if (m->verdict() != v1::VERDICT_OK) return failed(*m);
  const v1::Aggregation aggregation = request.aggregation();
  Aggregate a = Summarize(*m, aggregation);

  // Noise: measured again, longer; never averaged away.
  auto is_noisy = [&](const Aggregate& x) {
    return x.ref_spread > options_.noise_threshold || x.cand_spread > options_.noise_threshold ||
           x.bucket_disagreement > options_.bucket_disagreement;
  };
  auto spreads = [](const Aggregate& x) {
    return absl::StrFormat("ref %.1f%%, candidate %.1f%%", x.ref_spread * 100, x.cand_spread * 100);
  };
  std::string noise;  // the evidence, while the counted measurement stays noisy
  if (is_noisy(a)) {
    if (metrics_) metrics_->CountRemeasurement("noise");
    const std::string first = spreads(a);
    auto again = measure(options_.noise_remeasure_scale);
    if (!again.ok()) return again.status();
    if (again->verdict() != v1::VERDICT_OK) return failed(*again);
    m = std::move(again);
    a = Summarize(*m, aggregation);
    if (is_noisy(a)) {
      noise = absl::StrFormat("spread %s; re-measured %gx longer: %s (threshold %.0f%%)", first,
                              options_.noise_remeasure_scale, spreads(a), options_.noise_threshold * 100);
    }
  }

  auto speedup_of = [&](const Aggregate& x) {
    const double s = x.cand > 0 ? x.ref / x.cand : 0;
    return aggregation == v1::AGGREGATION_BUCKETED ? RoundTowardOne(s, options_.round_step) : s;
  };
  auto interval_of = [&](const v1::MeasurePairResponse& x) {
    return BootstrapSpeedup(DeviceTimes(x.reference_samples()), DeviceTimes(x.candidate_samples()),
                            options_.bootstrap_resamples, next_seed());
  };
  double speedup = speedup_of(a);
  SpeedupInterval ci = interval_of(*m);
  CheckMeasurement(*m, a, &resp);

  // Implausible jumps are measured again (the worker may pick another lane);
  // the lower of the two counts, with its own times and noise.
  const double best = request.best_known_speedup();
  if (speedup > options_.jump_speedup || (best > 0 && speedup > options_.jump_vs_best * best)) {
    if (metrics_) metrics_->CountRemeasurement("jump");
    auto again = measure();
    if (!again.ok()) return again.status();
    if (again->verdict() != v1::VERDICT_OK) return failed(*again);
    const Aggregate b = Summarize(*again, aggregation);
    const double second = speedup_of(b);
    const SpeedupInterval ci2 = interval_of(*again);
    CheckMeasurement(*again, b, &resp);
    // Either measurement's noise widens the band, up to a cap; neither
    // narrows it.
    auto half = [](const SpeedupInterval& c, double s) { return s > 0 ? (c.high - c.low) / (2 * s) : 0.0; };
    const double band = std::clamp(half(ci, speedup) + half(ci2, second), options_.reverify_agreement,
                                   std::max(options_.reverify_agreement, options_.reverify_agreement_max));
    const double lower = std::min(speedup, second), higher = std::max(speedup, second);
    std::string evidence = absl::StrFormat(
        "speedup %.3gx (best known %.3gx) re-measured on %s: %.3gx (band %.0f%%)", speedup, best,
        again->lane(), second, band * 100);
    if (!(lower > 0) || higher > (1 + band) * lower) {
      flag(v1::FLAG_IMPLAUSIBLE_JUMP, evidence + ", outside the agreement band");
    } else {
      resp.add_flag_evidence(absl::StrCat("re-verified: ", evidence, "; the lower counts"));
      if (second < speedup) {
        m = std::move(again);
        a = b;
        speedup = second;
        ci = ci2;
        noise = is_noisy(a) ? absl::StrFormat("spread of the re-measured jump: %s (threshold %.0f%%)", spreads(a),
                                              options_.noise_threshold * 100)
                            : "";
      }
    }
  }

  if (!noise.empty()) {
    const double half = speedup > 0 ? (ci.high - ci.low) / (2 * speedup) : 1.0;
    const std::string interval = absl::StrFormat("; the speedup's interval [%.3g, %.3g] is +/-%.1f%% (threshold %.0f%%)",
                                                 ci.low, ci.high, half * 100, options_.noise_ci_threshold * 100);
    if (a.bucket_disagreement > options_.bucket_disagreement) {
      flag(v1::FLAG_NOISY, absl::StrFormat("%s; buckets disagree by %.1f%%", noise, a.bucket_disagreement * 100));
    } else if (!(half <= options_.noise_ci_threshold) || !(ci.low > 0)) {
      flag(v1::FLAG_NOISY, noise + interval);
    } else {
      // As a NOISY reward is paid (lib/reward): the end of the interval
      // nearest 1, so noise can only pull the speedup toward "no change".
      const double conservative = reward::ConservativeSpeedup({v1::VERDICT_OK, speedup, {}, ci.low, ci.high});
      resp.add_flag_evidence(absl::StrFormat("noisy calls, speedup pinned down: %s%s; counted at %.3gx, not %.3gx",
                                             noise, interval, conservative, speedup));
      speedup = conservative;
    }
  }

  if (output_mismatches > 0) {
    flag(v1::FLAG_WRITE_AFTER_RETURN,
         absl::StrCat(output_mismatches, " of ", output_checks,
                      " timed calls returned outputs that differ from the reference's: ", mismatch_detail));
  }

  resp.set_verdict(v1::VERDICT_OK);
  resp.set_ref_seconds(a.ref);
  resp.set_candidate_seconds(a.cand);
  resp.set_speedup(speedup);
  resp.set_speedup_ci_low(ci.low);
  resp.set_speedup_ci_high(ci.high);
  resp.set_stop_reason(m->converged() ? v1::STOP_REASON_CONVERGED : v1::STOP_REASON_BUDGET);
  resp.set_ref_stream_seconds(a.ref_stream);
  resp.set_candidate_stream_seconds(a.cand_stream);
  *resp.mutable_ref_samples() = m->reference_samples();
  *resp.mutable_candidate_samples() = m->candidate_samples();
  resp.set_device_name(m->device_name());
  resp.set_calls_per_sample(std::max(1, m->calls_per_sample()));
  resp.set_timing_mode(m->timing_mode());
  resp.set_graph_fallback(m->graph_fallback());
  RememberBaseline(BaselineKey(request.task(), m->backend(), m->device_name()), *m);
  return resp;
}

void TimingOracle::CheckMeasurement(const v1::MeasurePairResponse& m, const Aggregate& a,
                                    v1::TimeResponse* resp) const {
  auto flag = [&](v1::Flag f, const std::string& evidence) { Flag(resp, f, evidence); };
  // Side stream: time the candidate's stream does not see, beyond what the
  // reference shows for the same synchronization.
  const double cand_gap = a.cand - a.cand_stream, ref_gap = a.ref - a.ref_stream;
  // Every call pays a few microseconds of synchronization beyond its stream
  // events; the reference's gap measures it, but only up to
  // side_stream_sync_allowance (a reference may itself work off its stream,
  // e.g. allocate inside the call, and that must not excuse the candidate).
  // What the candidate's gap adds on top is work its stream never saw.
  const double extra_gap =
      cand_gap - std::clamp(ref_gap, 0.0, options_.side_stream_sync_allowance_seconds);
  if (a.cand_stream < 0.5 * a.cand &&
      extra_gap > std::max(options_.side_stream_min_gap_seconds, 0.2 * a.cand)) {
    flag(v1::FLAG_SIDE_STREAM,
         absl::StrCat("candidate: stream events ", Ms(a.cand_stream), " vs device-synchronized ",
                      Ms(a.cand), " (reference ", Ms(a.ref_stream), " vs ", Ms(a.ref), ")"));
  }

  // Time the runner does not account for: the worker's round trip minus the
  // runner's own report. Both sides pay the same flush and input generation,
  // so a candidate whose hidden time is much larger is doing (or faking)
  // work outside its reported window.
  // Compared pair by pair: both calls of a pair share inputs, flush and load.
  const std::vector<double> hc = HiddenTimes(m.candidate_samples(), m.candidate_outside_seconds());
  const std::vector<double> hr = HiddenTimes(m.reference_samples(), m.reference_outside_seconds());
  std::vector<double> excess;
  for (size_t i = 0; i < hc.size() && i < hr.size(); ++i) excess.push_back(hc[i] - hr[i]);
  const double hidden_c = Median(hc), hidden_r = Median(hr), hidden_excess = Median(excess);
  // The allowance grows with the overhead itself (cache flush and input
  // generation dominate it on the host backend), so the check is only as
  // sensitive as that overhead is steady.
  const double allowed = std::max({options_.timer_slack_seconds,
                                   options_.timer_slack_fraction * a.ref,
                                   options_.timer_slack_overhead_fraction * hidden_r});
  if (hidden_excess > allowed) {
    flag(v1::FLAG_TIMER_MISMATCH,
         absl::StrCat("round trip minus reported time: candidate ", Ms(hidden_c), ", reference ",
                      Ms(hidden_r), ", paired excess ", Ms(hidden_excess), " (allowed ",
                      Ms(allowed), ")"));
  }

  // Faster than the device can move the task's bytes or do its flops, on
  // the backend the worker chose for the lane.
  const DeviceCeiling ceiling = CeilingFor(m.device_name(), m.backend());
  double floor = 0;
  if (ceiling.bytes_per_second > 0) floor = std::max(floor, m.task_bytes() / ceiling.bytes_per_second);
  if (ceiling.flops_per_second > 0) floor = std::max(floor, m.task_flops() / ceiling.flops_per_second);
  if (floor > 0 && a.cand < floor) {
    flag(v1::FLAG_BELOW_PHYSICAL_FLOOR,
         absl::StrCat("candidate ", Ms(a.cand), " is below the floor ", Ms(floor), " (",
                      m.task_bytes(), " bytes, ", m.task_flops(), " flops on ",
                      m.device_name(), ")"));
  }
}

absl::StatusOr<v1::Baseline> TimingOracle::GetBaseline(const v1::GetBaselineRequest& request,
                                                       const RequestContext& context) {
  // The device is known only after measuring; look for any fresh entry of
  // this task and backend first.
  const std::string prefix = BaselineKey(request.task(), request.backend(), "");
  {
    absl::MutexLock lock(&mu_);
    for (auto it = baselines_.lower_bound(prefix);
         it != baselines_.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
      if (clock_->Now() - absl::FromUnixSeconds(it->second.measured_at()) <
          options_.baseline_ttl) {
        return it->second;
      }
    }
  }
  v1::MeasureRequest m;
  *m.mutable_task() = request.task();
  m.set_backend(request.backend());
  m.set_iterations(100);
  m.set_warmup(options_.warmup);
  CRL_ASSIGN_OR_RETURN(WorkerClientInterface* worker, workers_->Pick(""));
  auto r = worker->Measure(m, context);
  if (!r.ok()) return r.status();
  if (r->verdict() != v1::VERDICT_OK) {
    return absl::UnavailableError(absl::StrCat("measuring the reference failed: ",
                                               v1::Verdict_Name(r->verdict())));
  }
  v1::MeasurePairResponse as_pair;
  *as_pair.mutable_reference_samples() = r->samples();
  as_pair.set_device_name(r->device_name());
  std::string key = BaselineKey(request.task(), request.backend(), r->device_name());
  RememberBaseline(key, as_pair);
  absl::MutexLock lock(&mu_);
  return baselines_[key];
}

}  // namespace crl::timing
