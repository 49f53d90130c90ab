// crl-timing's gRPC edge: TimingService over the timing oracle and the
// reward functions. No logic lives here.
#ifndef CRL_SERVICES_TIMING_TIMING_SERVICE_H_
#define CRL_SERVICES_TIMING_TIMING_SERVICE_H_

#include <functional>
#include <string>
#include <vector>

#include "common/server.h"
#include "crl/v1/timing.grpc.pb.h"
#include "services/timing/oracle.h"
#include "lib/reward/rewards.h"

namespace crl {

// Thread-safe; holds no per-call state.
class TimingServiceImpl final : public crl::v1::TimingService::CallbackService {
 public:
  // `workers`: the addresses ListWorkers answers with.
  TimingServiceImpl(timing::TimingOracle* oracle, CallEnv env, std::function<std::vector<std::string>()> workers)
      : oracle_(oracle), env_(env), workers_(std::move(workers)) {}

  grpc::ServerUnaryReactor* Time(grpc::CallbackServerContext* context,
                                 const crl::v1::TimeRequest* request,
                                 crl::v1::TimeResponse* response) override;
  grpc::ServerUnaryReactor* GetBaseline(grpc::CallbackServerContext* context,
                                        const crl::v1::GetBaselineRequest* request,
                                        crl::v1::Baseline* response) override;
  grpc::ServerUnaryReactor* ComputeReward(grpc::CallbackServerContext* context,
                                          const crl::v1::ComputeRewardRequest* request,
                                          crl::v1::RewardResult* response) override;
  grpc::ServerUnaryReactor* ListWorkers(grpc::CallbackServerContext* context,
                                        const crl::v1::ListWorkersRequest* request,
                                        crl::v1::WorkerAddresses* response) override;

 private:
  timing::TimingOracle* oracle_;
  CallEnv env_;
  std::function<std::vector<std::string>()> workers_;
};

}  // namespace crl

#endif  // CRL_SERVICES_TIMING_TIMING_SERVICE_H_
