#include "services/prompt/prompt_service.h"

#include "common/grpc_status.h"
#include "services/prompt/completion_parser.h"

namespace crl {

grpc::ServerUnaryReactor* PromptServiceImpl::BuildPrompt(grpc::CallbackServerContext* context,
                                                         const v1::BuildPromptRequest* request,
                                                         v1::BuildPromptResponse* response) {
  CallEnv inline_env{env_.auth, nullptr};  // pure and sub-millisecond
  return ServeUnary(context, inline_env, [this, request, response](const RequestContext&) {
    auto built = builder_->Build(*request);
    if (built.ok() && metrics_) metrics_->ObserveBuild(*built);
    return FillResponse(std::move(built), response);
  });
}

grpc::ServerUnaryReactor* PromptServiceImpl::ParseCompletion(
    grpc::CallbackServerContext* context, const v1::ParseCompletionRequest* request,
    v1::ParseCompletionResponse* response) {
  CallEnv inline_env{env_.auth, nullptr};
  return ServeUnary(context, inline_env, [this, request, response](const RequestContext&) {
    auto parsed = prompt::ParseRequest(*request);
    if (parsed.ok() && metrics_) metrics_->CountParse(parsed->error());
    return FillResponse(std::move(parsed), response);
  });
}

}  // namespace crl
