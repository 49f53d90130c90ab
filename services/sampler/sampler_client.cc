#include "services/sampler/grpc_sampler_client.h"

#include "common/status.h"

namespace crl {

absl::StatusOr<std::unique_ptr<GrpcSamplerClient>> GrpcSamplerClient::Create(
    const std::string& target, const ClientOptions& options) {
  CRL_ASSIGN_OR_RETURN(RpcClient client, RpcClient::Create(target, options));
  return std::unique_ptr<GrpcSamplerClient>(new GrpcSamplerClient(std::move(client)));
}

absl::StatusOr<v1::SampleResponse> GrpcSamplerClient::Sample(const v1::SampleRequest& request,
                                                             const RequestContext& context) {
  return client_.Call<v1::SampleResponse>(context, request, [this](auto... args) {
    stub_->async()->Sample(args...);
  });
}

absl::StatusOr<v1::ListPoliciesResponse> GrpcSamplerClient::ListPolicies(const RequestContext& context) {
  return client_.Call<v1::ListPoliciesResponse>(context, v1::ListPoliciesRequest(), [this](auto... args) {
    stub_->async()->ListPolicies(args...);
  });
}

}  // namespace crl
