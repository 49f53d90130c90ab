// The one way other services and the CLI reach crl-sampler (SamplerService):
// an interface, its gRPC implementation, and an in-process sampler
// (StartLocalSampler, sampler_setup.h). The fake for tests is
// fake_sampler_client.h.
#ifndef CRL_SERVICES_SAMPLER_SAMPLER_CLIENT_H_
#define CRL_SERVICES_SAMPLER_SAMPLER_CLIENT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/client.h"
#include "common/context.h"
#include "crl/v1/sampler.grpc.pb.h"

namespace crl {

// Implementations are thread-safe.
class SamplerClientInterface {
 public:
  virtual ~SamplerClientInterface() = default;
  virtual absl::StatusOr<v1::SampleResponse> Sample(const v1::SampleRequest& request,
                                                    const RequestContext& context) = 0;
  virtual absl::StatusOr<v1::ListPoliciesResponse> ListPolicies(const RequestContext& context) = 0;
};

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

#endif  // CRL_SERVICES_SAMPLER_SAMPLER_CLIENT_H_
