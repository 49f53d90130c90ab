// crl-prompt's gRPC edge: PromptService over the builder and the parser. No
// logic lives here. Both calls are cheap (well under a millisecond) and run
// on the reactor.
#ifndef CRL_SERVICES_PROMPT_PROMPT_SERVICE_H_
#define CRL_SERVICES_PROMPT_PROMPT_SERVICE_H_

#include "common/server.h"
#include "crl/v1/prompt.grpc.pb.h"
#include "services/prompt/prompt_builder.h"
#include "services/prompt/prompt_metrics.h"

namespace crl {

// Thread-safe; holds no per-call state.
class PromptServiceImpl final : public v1::PromptService::CallbackService {
 public:
  // `metrics` may be null.
  PromptServiceImpl(const prompt::PromptBuilder* builder, prompt::PromptMetrics* metrics,
                    CallEnv env)
      : builder_(builder), metrics_(metrics), env_(env) {}

  grpc::ServerUnaryReactor* BuildPrompt(grpc::CallbackServerContext* context,
                                        const v1::BuildPromptRequest* request,
                                        v1::BuildPromptResponse* response) override;
  grpc::ServerUnaryReactor* ParseCompletion(grpc::CallbackServerContext* context,
                                            const v1::ParseCompletionRequest* request,
                                            v1::ParseCompletionResponse* response) override;

 private:
  const prompt::PromptBuilder* builder_;
  prompt::PromptMetrics* metrics_;
  CallEnv env_;
};

}  // namespace crl

#endif  // CRL_SERVICES_PROMPT_PROMPT_SERVICE_H_
