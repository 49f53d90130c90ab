// crl-prompt's parts from one options struct: the templates (shipped, then
// the user's) and the ABI header shown to native-format models. Shared by
// crl-prompt's main() and StartLocalPrompt.
#ifndef CRL_SERVICES_PROMPT_PROMPT_SETUP_H_
#define CRL_SERVICES_PROMPT_PROMPT_SETUP_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/options.h"
#include "services/prompt/prompt_builder.h"
#include "lib/prompt/template.h"

namespace crl::prompt {

struct PromptOptions {
  // Extra template directories after the shipped prompts/ (theirs win by name).
  std::vector<std::string> template_dirs;
  // The shipped templates' directory (default: this installation's prompts/).
  std::string shipped_dir;
  // include/crl/kernel.h (default: this installation's).
  std::string abi_header;
};

// Binds --prompts_dir (a list), --shipped_prompts_dir, --abi_header.
void BindPromptOptions(OptionSet* set, PromptOptions* options);

struct PromptParts {
  TemplateSet templates;
  std::unique_ptr<PromptBuilder> builder;
};

// Loads and checks every template; errors name the file and line.
absl::StatusOr<std::unique_ptr<PromptParts>> BuildPromptParts(const PromptOptions& options);

}  // namespace crl::prompt

#endif  // CRL_SERVICES_PROMPT_PROMPT_SETUP_H_
