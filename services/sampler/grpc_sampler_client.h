// Sampler client over gRPC: the implementation of sampler_client.h's interface
// that the binaries and the CLI connect with. Code that only uses a client
// includes sampler_client.h, which is free of gRPC.
#ifndef CRL_SERVICES_SAMPLER_GRPC_SAMPLER_CLIENT_H_
#define CRL_SERVICES_SAMPLER_GRPC_SAMPLER_CLIENT_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/client.h"
#include "common/context.h"
#include "crl/v1/sampler.grpc.pb.h"
#include "services/sampler/sampler_client.h"

namespace crl {

// crl-sampler over gRPC.
class GrpcSamplerClient final : public SamplerClientInterface {
 public:
  static absl::StatusOr<std::unique_ptr<GrpcSamplerClient>> Create(const std::string& target,
                                                                   const ClientOptions& options);
  absl::StatusOr<v1::SampleResponse> Sample(const v1::SampleRequest& request,
                                            const RequestContext& context) override;
  absl::StatusOr<v1::ListPoliciesResponse> ListPolicies(const RequestContext& context) override;

 private:
  explicit GrpcSamplerClient(RpcClient client)
      : client_(std::move(client)), stub_(v1::SamplerService::NewStub(client_.channel())) {}
  RpcClient client_;
  std::unique_ptr<v1::SamplerService::Stub> stub_;
};

}  // namespace crl

#endif  // CRL_SERVICES_SAMPLER_GRPC_SAMPLER_CLIENT_H_
