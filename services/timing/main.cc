// crl-timing: the timing oracle service. It drives one crl-worker's lanes
// through MeasurePair and owns the statistics and trust decisions.
#include <memory>

#include "common/clock.h"
#include "common/service_main.h"
#include "services/timing/oracle.h"
#include "services/timing/timing_metrics.h"
#include "services/timing/timing_service.h"
#include "services/timing/timing_setup.h"
#include "services/worker/worker_client.h"

int main(int argc, char** argv) {
  crl::ServiceMain service_main({"crl-timing", "crl.v1.TimingService",
                                 "The timing oracle: speedups with confidence intervals.",
                                 "127.0.0.1:50052", {"timing", 4, 64}});
  crl::timing::TimingOptions options;
  crl::timing::BindTimingOptions(service_main.flags(), &options);
  std::unique_ptr<crl::WorkerClientInterface> worker;
  std::unique_ptr<crl::timing::TimingMetrics> metrics;
  std::unique_ptr<crl::timing::TimingOracle> oracle;
  std::unique_ptr<crl::TimingServiceImpl> service;
  return service_main.Run(argc, argv, [&](crl::ServiceSetup& setup) -> absl::Status {
    auto client = crl::GrpcWorkerClient::Create(options.worker, options.worker_client);
    if (!client.ok()) return client.status();
    worker = std::move(*client);
    metrics = std::make_unique<crl::timing::TimingMetrics>(setup.registry());
    oracle = std::make_unique<crl::timing::TimingOracle>(options.oracle, worker.get(),
                                                         crl::RealClock::Get(), metrics.get());
    if (options.calibrate_host) {
      oracle->SetHostCeiling({crl::timing::MeasureHostCopyBandwidth(), 0});
    }
    service = std::make_unique<crl::TimingServiceImpl>(oracle.get(), options.rewards,
                                                       setup.call_env());
    setup.AddService(service.get());
    return absl::OkStatus();
  });
}
