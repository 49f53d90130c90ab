// The one way other services and the CLI reach crl-timing (TimingService): an
// interface (free of gRPC: code that only uses a client compiles without it),
// its gRPC implementation in grpc_timing_client.h, and an in-process oracle
// over a worker client for single-process use. The fake for tests is
// fake_timing_client.h.
#ifndef CRL_SERVICES_TIMING_TIMING_CLIENT_H_
#define CRL_SERVICES_TIMING_TIMING_CLIENT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/context.h"
#include "crl/v1/timing.pb.h"
#include "services/worker/worker_client.h"

namespace crl {

// Implementations are thread-safe. Statuses follow timing.proto: request
// errors, overload, cancellation, an unreachable service; every outcome of
// a measurement is in the response.
class TimingClientInterface {
 public:
  virtual ~TimingClientInterface() = default;
  virtual absl::StatusOr<v1::TimeResponse> Time(const v1::TimeRequest& request,
                                                const RequestContext& context) = 0;
  virtual absl::StatusOr<v1::Baseline> GetBaseline(const v1::GetBaselineRequest& request,
                                                   const RequestContext& context) = 0;
  // The worker addresses the service measures on (TimingService.ListWorkers).
  // UNIMPLEMENTED where the timing service is not remote (in-process timing
  // over one worker object, fakes that were not told any).
  virtual absl::StatusOr<std::vector<std::string>> ListWorkers(const RequestContext& context) {
    (void)context;
    return absl::UnimplementedError("this timing client has no worker addresses to list");
  }
  virtual absl::StatusOr<v1::RewardResult> ComputeReward(const v1::ComputeRewardRequest& request,
                                                         const RequestContext& context) = 0;
};

struct LocalTimingOptions {
  // Measure this machine's memory bandwidth (host_ceiling.h) as the host backend's ceiling
  // (for the physical-floor check). Only meaningful when the worker runs on
  // this machine.
  bool calibrate_host = false;
};

// The timing oracle inside this process, measuring on `worker` (which must
// outlive it). For single-process use only: deployments run crl-timing.
// Defined in crl_timing_lib.
absl::StatusOr<std::unique_ptr<TimingClientInterface>> StartLocalTiming(
    WorkerClientInterface* worker, const LocalTimingOptions& options);

}  // namespace crl

#endif  // CRL_SERVICES_TIMING_TIMING_CLIENT_H_
