#include "services/timing/timing_service.h"

namespace crl {
namespace {
grpc::Status NotYet(const char* what) {
  // The timing oracle (docs/timing.md) is not built yet; say so plainly
  // rather than return numbers nobody measured.
  return grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                      std::string(what) + " is not implemented in this version of crl-timing");
}
}  // namespace

grpc::ServerUnaryReactor* TimingServiceImpl::Time(grpc::CallbackServerContext* context,
                                                  const crl::v1::TimeRequest*,
                                                  crl::v1::TimeResponse*) {
  return ServeUnary(context, env_, [] { return NotYet("TimingService.Time"); });
}

grpc::ServerUnaryReactor* TimingServiceImpl::GetBaseline(grpc::CallbackServerContext* context,
                                                         const crl::v1::GetBaselineRequest*,
                                                         crl::v1::Baseline*) {
  return ServeUnary(context, env_, [] { return NotYet("TimingService.GetBaseline"); });
}

grpc::ServerUnaryReactor* TimingServiceImpl::ComputeReward(
    grpc::CallbackServerContext* context, const crl::v1::ComputeRewardRequest*,
    crl::v1::RewardResult*) {
  return ServeUnary(context, env_, [] { return NotYet("TimingService.ComputeReward"); });
}

}  // namespace crl
