#include "services/timing/timing_metrics.h"

#include "lib/reward/names.h"

namespace crl::timing {

TimingMetrics::TimingMetrics(prometheus::Registry* r)
    : results(prometheus::BuildCounter()
                  .Name("crl_timing_results_total")
                  .Help("Time calls answered, by verdict")
                  .Register(*r)),
      flags(prometheus::BuildCounter()
                .Name("crl_timing_flags_total")
                .Help("Trust flags raised by the oracle, by flag")
                .Register(*r)),
      stop_reasons(prometheus::BuildCounter()
                       .Name("crl_timing_stop_reasons_total")
                       .Help("Why measurements stopped: converged, budget or error")
                       .Register(*r)),
      speedup(prometheus::BuildHistogram()
                  .Name("crl_timing_speedup")
                  .Help("Measured speedups (reference time / candidate time)")
                  .Register(*r)
                  .Add({}, prometheus::Histogram::BucketBoundaries{
                               0.25, 0.5, 0.8, 0.95, 1.05, 1.25, 1.5, 2, 3, 5, 10, 100})),
      remeasurements(prometheus::BuildCounter()
                         .Name("crl_timing_remeasurements_total")
                         .Help("Measurements taken again, by cause (noise, jump)")
                         .Register(*r)) {}

void TimingMetrics::Observe(const v1::TimeResponse& response) {
  results.Add({{"verdict", LabelValue(VerdictShortName(response.verdict()))}}).Increment();
  stop_reasons.Add({{"reason", LabelValue(StopReasonShortName(response.stop_reason()))}})
      .Increment();
  for (int f : response.flags()) {
    flags.Add({{"flag", LabelValue(FlagShortName(static_cast<v1::Flag>(f)))}}).Increment();
  }
  if (response.verdict() == v1::VERDICT_OK && response.speedup() > 0) {
    speedup.Observe(response.speedup());
  }
}

void TimingMetrics::CountRemeasurement(const std::string& cause) {
  remeasurements.Add({{"cause", cause}}).Increment();
}

}  // namespace crl::timing
