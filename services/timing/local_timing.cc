// The in-process timing oracle of timing_client.h.
#include "lib/reward/rewards.h"
#include "services/timing/host_ceiling.h"
#include "services/timing/oracle.h"
#include "services/timing/timing_client.h"

namespace crl {
namespace {

class LocalTimingClient final : public TimingClientInterface {
 public:
  LocalTimingClient(WorkerClientInterface* worker, const LocalTimingOptions& options)
      : oracle_(timing::OracleOptions(), worker, RealClock::Get()) {
    if (options.calibrate_host) oracle_.SetHostCeiling({timing::MeasureHostBandwidthCeiling(), 0});
  }

  absl::StatusOr<v1::TimeResponse> Time(const v1::TimeRequest& request,
                                        const RequestContext& context) override {
    return oracle_.Time(request, context);
  }
  absl::StatusOr<v1::Baseline> GetBaseline(const v1::GetBaselineRequest& request,
                                           const RequestContext& context) override {
    return oracle_.GetBaseline(request, context);
  }
  absl::StatusOr<v1::RewardResult> ComputeReward(const v1::ComputeRewardRequest& request,
                                                 const RequestContext&) override {
    return reward::ComputeReward(request);
  }

 private:
  timing::TimingOracle oracle_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<TimingClientInterface>> StartLocalTiming(
    WorkerClientInterface* worker, const LocalTimingOptions& options) {
  if (worker == nullptr) return absl::InvalidArgumentError("local timing needs a worker");
  return std::unique_ptr<TimingClientInterface>(new LocalTimingClient(worker, options));
}

}  // namespace crl
