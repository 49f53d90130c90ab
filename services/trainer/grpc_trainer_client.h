// Trainer client over gRPC: the implementation of trainer_client.h's interface
// that the binaries and the CLI connect with. Code that only uses a client
// includes trainer_client.h, which is free of gRPC.
#ifndef CRL_SERVICES_TRAINER_GRPC_TRAINER_CLIENT_H_
#define CRL_SERVICES_TRAINER_GRPC_TRAINER_CLIENT_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/client.h"
#include "common/context.h"
#include "crl/v1/trainer.grpc.pb.h"
#include "services/trainer/trainer_client.h"

namespace crl {

// crl-trainer over gRPC.
class GrpcTrainerClient final : public TrainerClientInterface {
 public:
  static absl::StatusOr<std::unique_ptr<GrpcTrainerClient>> Create(const std::string& target,
                                                                   const ClientOptions& options);
  absl::StatusOr<v1::SubmitGroupResponse> SubmitGroup(const v1::SubmitGroupRequest& request,
                                                      const RequestContext& context) override;
  absl::StatusOr<v1::SubmitExamplesResponse> SubmitExamples(const v1::SubmitExamplesRequest& request,
                                                            const RequestContext& context) override;
  absl::StatusOr<v1::PolicyVersion> GetPolicyVersion(const RequestContext& context) override;
  absl::StatusOr<v1::CheckpointResponse> Checkpoint(const RequestContext& context) override;
  absl::StatusOr<v1::FlushResponse> Flush(const RequestContext& context) override;
  absl::StatusOr<v1::PolicyVersion> BeginPhase(const v1::BeginPhaseRequest& request,
                                               const RequestContext& context) override;
  absl::Status WatchPolicyVersions(
      const RequestContext& context,
      const std::function<void(const v1::PolicyVersion&)>& on_version) override;

 private:
  explicit GrpcTrainerClient(RpcClient client)
      : client_(std::move(client)), stub_(v1::TrainerService::NewStub(client_.channel())) {}
  RpcClient client_;
  std::unique_ptr<v1::TrainerService::Stub> stub_;
};

}  // namespace crl

#endif  // CRL_SERVICES_TRAINER_GRPC_TRAINER_CLIENT_H_
