// Prompt client over gRPC: the implementation of prompt_client.h's interface
// that the binaries and the CLI connect with. Code that only uses a client
// includes prompt_client.h, which is free of gRPC.
#ifndef CRL_SERVICES_PROMPT_GRPC_PROMPT_CLIENT_H_
#define CRL_SERVICES_PROMPT_GRPC_PROMPT_CLIENT_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/client.h"
#include "common/context.h"
#include "crl/v1/prompt.grpc.pb.h"
#include "services/prompt/prompt_client.h"

namespace crl {

// crl-prompt over gRPC.
class GrpcPromptClient final : public PromptClientInterface {
 public:
  static absl::StatusOr<std::unique_ptr<GrpcPromptClient>> Create(const std::string& target,
                                                                  const ClientOptions& options);
  absl::StatusOr<v1::BuildPromptResponse> BuildPrompt(const v1::BuildPromptRequest& request,
                                                      const RequestContext& context) override;
  absl::StatusOr<v1::ParseCompletionResponse> ParseCompletion(
      const v1::ParseCompletionRequest& request, const RequestContext& context) override;

 private:
  explicit GrpcPromptClient(RpcClient client)
      : client_(std::move(client)), stub_(v1::PromptService::NewStub(client_.channel())) {}
  RpcClient client_;
  std::unique_ptr<v1::PromptService::Stub> stub_;
};

}  // namespace crl

#endif  // CRL_SERVICES_PROMPT_GRPC_PROMPT_CLIENT_H_
