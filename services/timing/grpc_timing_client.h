// Timing client over gRPC: the implementation of timing_client.h's interface
// that the binaries and the CLI connect with. Code that only uses a client
// includes timing_client.h, which is free of gRPC.
#ifndef CRL_SERVICES_TIMING_GRPC_TIMING_CLIENT_H_
#define CRL_SERVICES_TIMING_GRPC_TIMING_CLIENT_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/client.h"
#include "common/context.h"
#include "crl/v1/timing.grpc.pb.h"
#include "services/timing/timing_client.h"

namespace crl {

// crl-timing over gRPC.
class GrpcTimingClient final : public TimingClientInterface {
 public:
  static absl::StatusOr<std::unique_ptr<GrpcTimingClient>> Create(const std::string& target,
                                                                  const ClientOptions& options);
  absl::StatusOr<v1::TimeResponse> Time(const v1::TimeRequest& request,
                                        const RequestContext& context) override;
  absl::StatusOr<v1::Baseline> GetBaseline(const v1::GetBaselineRequest& request,
                                           const RequestContext& context) override;
  absl::StatusOr<v1::RewardResult> ComputeReward(const v1::ComputeRewardRequest& request,
                                                 const RequestContext& context) override;
  absl::StatusOr<std::vector<std::string>> ListWorkers(const RequestContext& context) override;

 private:
  explicit GrpcTimingClient(RpcClient client)
      : client_(std::move(client)), stub_(v1::TimingService::NewStub(client_.channel())) {}
  RpcClient client_;
  std::unique_ptr<v1::TimingService::Stub> stub_;
};

}  // namespace crl

#endif  // CRL_SERVICES_TIMING_GRPC_TIMING_CLIENT_H_
