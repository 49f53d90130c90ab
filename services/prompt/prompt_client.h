// The one way other services and the CLI reach crl-prompt (PromptService): an
// interface (free of gRPC: code that only uses a client compiles without it),
// its gRPC implementation in grpc_prompt_client.h, and an in-process prompt
// builder for single-process use. The fake for tests is fake_prompt_client.h.
#ifndef CRL_SERVICES_PROMPT_PROMPT_CLIENT_H_
#define CRL_SERVICES_PROMPT_PROMPT_CLIENT_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/context.h"
#include "crl/v1/prompt.pb.h"

namespace crl {

// Implementations are thread-safe. A parse reject is a response (its error
// field), never a status.
class PromptClientInterface {
 public:
  virtual ~PromptClientInterface() = default;
  virtual absl::StatusOr<v1::BuildPromptResponse> BuildPrompt(
      const v1::BuildPromptRequest& request, const RequestContext& context) = 0;
  virtual absl::StatusOr<v1::ParseCompletionResponse> ParseCompletion(
      const v1::ParseCompletionRequest& request, const RequestContext& context) = 0;
};

struct LocalPromptOptions {
  // Template directories, later ones overriding earlier ones by name; empty:
  // this installation's prompts/.
  std::vector<std::string> template_dirs;
};

// The prompt builder and parser inside this process (templates loaded now;
// errors name the file and line). Defined in crl_prompt_lib.
absl::StatusOr<std::unique_ptr<PromptClientInterface>> StartLocalPrompt(
    const LocalPromptOptions& options);

}  // namespace crl

#endif  // CRL_SERVICES_PROMPT_PROMPT_CLIENT_H_
