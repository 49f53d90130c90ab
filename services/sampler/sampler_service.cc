#include "services/sampler/sampler_service.h"

#include "common/grpc_status.h"

namespace crl {

grpc::ServerUnaryReactor* SamplerServiceImpl::Sample(grpc::CallbackServerContext* context,
                                                     const v1::SampleRequest* request,
                                                     v1::SampleResponse* response) {
  return ServeUnary(context, env_, [this, request, response](const RequestContext& ctx) {
    auto r = backend_->Sample(*request, ctx);
    if (metrics_) metrics_->ObserveRequest(kind_, r.status(), r.ok() ? &*r : nullptr);
    return FillResponse(std::move(r), response);
  });
}

grpc::ServerUnaryReactor* SamplerServiceImpl::ListPolicies(grpc::CallbackServerContext* context,
                                                           const v1::ListPoliciesRequest*,
                                                           v1::ListPoliciesResponse* response) {
  CallEnv inline_env{env_.auth, nullptr};
  return ServeUnary(context, inline_env, [this, response](const RequestContext&) {
    for (const v1::Policy& p : backend_->Policies()) *response->add_policies() = p;
    return grpc::Status::OK;
  });
}

}  // namespace crl
