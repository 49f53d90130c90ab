// crl-timing's Prometheus metrics. Labels are bounded: verdict, flag and stop
// reason names, re-measurement causes.
#ifndef CRL_SERVICES_TIMING_TIMING_METRICS_H_
#define CRL_SERVICES_TIMING_TIMING_METRICS_H_

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <string>

#include "crl/v1/timing.pb.h"

namespace crl::timing {

// Thread-safe (prometheus-cpp metrics are).
struct TimingMetrics {
  explicit TimingMetrics(prometheus::Registry* registry);

  // Counts one finished Time call: its verdict, stop reason, flags and (when
  // it measured one) its speedup.
  void Observe(const v1::TimeResponse& response);
  // cause: "noise" (a spread above the threshold) or "jump" (an implausible
  // speedup re-verified).
  void CountRemeasurement(const std::string& cause);

  // crl_timing_results_total{verdict}
  prometheus::Family<prometheus::Counter>& results;
  // crl_timing_flags_total{flag}: trust flags raised (and labels).
  prometheus::Family<prometheus::Counter>& flags;
  // crl_timing_stop_reasons_total{reason}: converged, budget, error.
  prometheus::Family<prometheus::Counter>& stop_reasons;
  // crl_timing_speedup: measured speedups of verified candidates (ratio).
  prometheus::Histogram& speedup;
  // crl_timing_remeasurements_total{cause}
  prometheus::Family<prometheus::Counter>& remeasurements;
};

}  // namespace crl::timing

#endif  // CRL_SERVICES_TIMING_TIMING_METRICS_H_
