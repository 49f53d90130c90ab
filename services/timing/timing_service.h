// crl-timing's gRPC edge: TimingService over the timing oracle and the
// reward functions. No logic lives here.
#ifndef CRL_SERVICES_TIMING_TIMING_SERVICE_H_
#define CRL_SERVICES_TIMING_TIMING_SERVICE_H_

#include "common/server.h"
#include "crl/v1/timing.grpc.pb.h"
#include "services/timing/oracle.h"
#include "lib/reward/rewards.h"

namespace crl {

// Thread-safe; holds no per-call state.
class TimingServiceImpl final : public crl::v1::TimingService::CallbackService {
 public:
  TimingServiceImpl(timing::TimingOracle* oracle, CallEnv env) : oracle_(oracle), env_(env) {}

  grpc::ServerUnaryReactor* Time(grpc::CallbackServerContext* context,
                                 const crl::v1::TimeRequest* request,
                                 crl::v1::TimeResponse* response) override;
  grpc::ServerUnaryReactor* GetBaseline(grpc::CallbackServerContext* context,
                                        const crl::v1::GetBaselineRequest* request,
                                        crl::v1::Baseline* response) override;
  grpc::ServerUnaryReactor* ComputeReward(grpc::CallbackServerContext* context,
                                          const crl::v1::ComputeRewardRequest* request,
                                          crl::v1::RewardResult* response) override;

 private:
  timing::TimingOracle* oracle_;
  CallEnv env_;
};

}  // namespace crl

#endif  // CRL_SERVICES_TIMING_TIMING_SERVICE_H_
