#include "services/prompt/grpc_prompt_client.h"

#include "common/status.h"

namespace crl {

absl::StatusOr<std::unique_ptr<GrpcPromptClient>> GrpcPromptClient::Create(
    const std::string& target, const ClientOptions& options) {
  CRL_ASSIGN_OR_RETURN(RpcClient client, RpcClient::Create(target, options));
  return std::unique_ptr<GrpcPromptClient>(new GrpcPromptClient(std::move(client)));
}

absl::StatusOr<v1::BuildPromptResponse> GrpcPromptClient::BuildPrompt(
    const v1::BuildPromptRequest& request, const RequestContext& context) {
  return client_.Call<v1::BuildPromptResponse>(context, request, [this](auto... args) {
    stub_->async()->BuildPrompt(args...);
  });
}

absl::StatusOr<v1::ParseCompletionResponse> GrpcPromptClient::ParseCompletion(
    const v1::ParseCompletionRequest& request, const RequestContext& context) {
  return client_.Call<v1::ParseCompletionResponse>(context, request, [this](auto... args) {
    stub_->async()->ParseCompletion(args...);
  });
}

}  // namespace crl
