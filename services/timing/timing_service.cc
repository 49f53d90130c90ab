#include "services/timing/timing_service.h"

#include "common/grpc_status.h"

namespace crl {

grpc::ServerUnaryReactor* TimingServiceImpl::Time(grpc::CallbackServerContext* context,
                                                  const crl::v1::TimeRequest* request,
                                                  crl::v1::TimeResponse* response) {
  return ServeUnary(context, env_, [this, request, response](const RequestContext& call) {
    return FillResponse(oracle_->Time(*request, call), response);
  });
}

grpc::ServerUnaryReactor* TimingServiceImpl::GetBaseline(grpc::CallbackServerContext* context,
                                                         const crl::v1::GetBaselineRequest* request,
                                                         crl::v1::Baseline* response) {
  return ServeUnary(context, env_, [this, request, response](const RequestContext& call) {
    return FillResponse(oracle_->GetBaseline(*request, call), response);
  });
}

grpc::ServerUnaryReactor* TimingServiceImpl::ComputeReward(
    grpc::CallbackServerContext* context, const crl::v1::ComputeRewardRequest* request,
    crl::v1::RewardResult* response) {
  CallEnv inline_env{env_.auth, nullptr};  // pure and cheap
  return ServeUnary(context, inline_env, [this, request, response](const RequestContext&) {
    if (absl::Status s = reward::ValidateRewardParams(request->params()); !s.ok()) return ToGrpcStatus(s);
    *response = reward::ComputeReward(*request);
    return grpc::Status::OK;
  });
}

grpc::ServerUnaryReactor* TimingServiceImpl::ListWorkers(grpc::CallbackServerContext* context,
                                                         const crl::v1::ListWorkersRequest*,
                                                         crl::v1::WorkerAddresses* response) {
  // Resolving a dns:/// entry may block: on the call executor, not inline.
  return ServeUnary(context, env_, [this, response](const RequestContext&) {
    for (std::string& a : workers_()) response->add_addresses(std::move(a));
    return grpc::Status::OK;
  });
}

}  // namespace crl
