#include "services/trainer/grpc_trainer_client.h"

#include "common/status.h"

namespace crl {

absl::StatusOr<std::unique_ptr<GrpcTrainerClient>> GrpcTrainerClient::Create(
    const std::string& target, const ClientOptions& options) {
  CRL_ASSIGN_OR_RETURN(RpcClient client, RpcClient::Create(target, options));
  return std::unique_ptr<GrpcTrainerClient>(new GrpcTrainerClient(std::move(client)));
}

absl::StatusOr<v1::SubmitGroupResponse> GrpcTrainerClient::SubmitGroup(
    const v1::SubmitGroupRequest& request, const RequestContext& context) {
  return client_.Call<v1::SubmitGroupResponse>(context, request, [this](auto... args) {
    stub_->async()->SubmitGroup(args...);
  });
}

absl::StatusOr<v1::SubmitExamplesResponse> GrpcTrainerClient::SubmitExamples(
    const v1::SubmitExamplesRequest& request, const RequestContext& context) {
  return client_.Call<v1::SubmitExamplesResponse>(context, request, [this](auto... args) {
    stub_->async()->SubmitExamples(args...);
  });
}

absl::StatusOr<v1::PolicyVersion> GrpcTrainerClient::GetPolicyVersion(const RequestContext& context) {
  return client_.Call<v1::PolicyVersion>(context, v1::GetPolicyVersionRequest(), [this](auto... args) {
    stub_->async()->GetPolicyVersion(args...);
  });
}

absl::StatusOr<v1::CheckpointResponse> GrpcTrainerClient::Checkpoint(const RequestContext& context) {
  return client_.Call<v1::CheckpointResponse>(context, v1::CheckpointRequest(), [this](auto... args) {
    stub_->async()->Checkpoint(args...);
  });
}

absl::StatusOr<v1::FlushResponse> GrpcTrainerClient::Flush(const RequestContext& context) {
  return client_.Call<v1::FlushResponse>(context, v1::FlushRequest(), [this](auto... args) {
    stub_->async()->Flush(args...);
  });
}

absl::StatusOr<v1::PolicyVersion> GrpcTrainerClient::BeginPhase(const v1::BeginPhaseRequest& request,
                                                                const RequestContext& context) {
  return client_.Call<v1::PolicyVersion>(context, request, [this](auto... args) {
    stub_->async()->BeginPhase(args...);
  });
}

absl::Status GrpcTrainerClient::WatchPolicyVersions(
    const RequestContext& context, const std::function<void(const v1::PolicyVersion&)>& on_version) {
  return client_.ReadStream<v1::PolicyVersion>(
      context,
      [&](grpc::ClientContext* c) { return stub_->WatchPolicyVersions(c, v1::WatchPolicyVersionsRequest()); },
      on_version);
}

}  // namespace crl
