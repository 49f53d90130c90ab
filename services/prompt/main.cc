// crl-prompt: contrastive prompts from scored exemplars, and a strict
// completion parser. Stateless: scale it out behind a load balancer.
#include <memory>

#include "common/service_main.h"
#include "common/status.h"
#include "services/prompt/prompt_metrics.h"
#include "services/prompt/prompt_service.h"
#include "services/prompt/prompt_setup.h"

int main(int argc, char** argv) {
  crl::ServiceMain service_main({"crl-prompt", "crl.v1.PromptService",
                                 "Contrastive prompts from scored exemplars; completion parsing.",
                                 "127.0.0.1:50053", {"prompt", 2, 64}});
  crl::prompt::PromptOptions options;
  crl::prompt::BindPromptOptions(service_main.flags(), &options);
  std::unique_ptr<crl::prompt::PromptParts> parts;
  std::unique_ptr<crl::prompt::PromptMetrics> metrics;
  std::unique_ptr<crl::PromptServiceImpl> service;
  return service_main.Run(argc, argv, [&](crl::ServiceSetup& setup) -> absl::Status {
    CRL_ASSIGN_OR_RETURN(parts, crl::prompt::BuildPromptParts(options));
    metrics = std::make_unique<crl::prompt::PromptMetrics>(setup.registry());
    service = std::make_unique<crl::PromptServiceImpl>(parts->builder.get(), metrics.get(),
                                                       setup.call_env());
    setup.AddService(service.get());
    return absl::OkStatus();
  });
}
