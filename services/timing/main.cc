// crl-timing: the timing oracle service. It drives crl-workers' lanes
// through MeasurePair (each request on one worker) and owns the statistics
// and trust decisions.
#include <memory>

#include "common/clock.h"
#include "common/service_main.h"
#include "services/timing/host_ceiling.h"
#include "services/timing/oracle.h"
#include "services/timing/timing_metrics.h"
#include "services/timing/timing_service.h"
#include "services/timing/timing_setup.h"
#include "services/timing/worker_set.h"
#include "common/status.h"
#include "services/worker/grpc_worker_client.h"

int main(int argc, char** argv) {
  // A Time call holds its thread while the worker measures (a second or
  // more of a lane): one thread per lane of the fleet it serves, so 64 by
  // default (crl-bench-fleet: 4 capped a 64-GPU fleet at 5 evaluations/s).
  crl::ServiceMain service_main({"crl-timing", "crl.v1.TimingService",
                                 "The timing oracle: speedups with confidence intervals.",
                                 "127.0.0.1:50052", {"timing", 64, 256}});
  crl::timing::TimingOptions options;
  crl::timing::BindTimingOptions(service_main.flags(), &options);
  std::unique_ptr<crl::timing::WorkerSet> workers;
  std::unique_ptr<crl::timing::TimingMetrics> metrics;
  std::unique_ptr<crl::timing::TimingOracle> oracle;
  std::unique_ptr<crl::TimingServiceImpl> service;
  return service_main.Run(argc, argv, [&](crl::ServiceSetup& setup) -> absl::Status {
    workers = std::make_unique<crl::timing::WorkerSet>(
        options.workers.empty() ? std::vector<std::string>{options.worker} : options.workers,
        [&](const std::string& address) -> absl::StatusOr<std::unique_ptr<crl::WorkerClientInterface>> {
          CRL_ASSIGN_OR_RETURN(auto c, crl::GrpcWorkerClient::Create(address, options.worker_client));
          return std::unique_ptr<crl::WorkerClientInterface>(std::move(c));
        },
        crl::RealClock::Get());
    // A name that does not resolve, or a bad address, is a start-up error.
    if (auto first = workers->Pick(""); !first.ok()) return first.status();
    metrics = std::make_unique<crl::timing::TimingMetrics>(setup.registry());
    oracle = std::make_unique<crl::timing::TimingOracle>(options.oracle, workers.get(), crl::RealClock::Get(),
                                                         metrics.get());
    if (options.calibrate_host) {
      oracle->SetHostCeiling({crl::timing::MeasureHostBandwidthCeiling(), 0});
    }
    service = std::make_unique<crl::TimingServiceImpl>(oracle.get(), setup.call_env(),
                                                       [&] { return workers->Addresses(); });
    setup.AddService(service.get());
    return absl::OkStatus();
  });
}
