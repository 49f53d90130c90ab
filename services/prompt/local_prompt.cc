// The in-process prompt builder and parser of prompt_client.h.
#include "common/status.h"
#include "services/prompt/completion_parser.h"
#include "services/prompt/prompt_client.h"
#include "services/prompt/prompt_setup.h"

namespace crl {
namespace {

class LocalPromptClient final : public PromptClientInterface {
 public:
  explicit LocalPromptClient(std::unique_ptr<prompt::PromptParts> parts)
      : parts_(std::move(parts)) {}
  absl::StatusOr<v1::BuildPromptResponse> BuildPrompt(const v1::BuildPromptRequest& request,
                                                      const RequestContext&) override {
    return parts_->builder->Build(request);
  }
  absl::StatusOr<v1::ParseCompletionResponse> ParseCompletion(
      const v1::ParseCompletionRequest& request, const RequestContext&) override {
    return prompt::ParseRequest(request);
  }

 private:
  std::unique_ptr<prompt::PromptParts> parts_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<PromptClientInterface>> StartLocalPrompt(
    const LocalPromptOptions& options) {
  prompt::PromptOptions o;
  o.template_dirs = options.template_dirs;
  CRL_ASSIGN_OR_RETURN(auto parts, prompt::BuildPromptParts(o));
  return std::unique_ptr<PromptClientInterface>(new LocalPromptClient(std::move(parts)));
}

}  // namespace crl
