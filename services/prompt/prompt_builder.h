// BuildPrompt's logic, free of gRPC: the task (inline or on this file
// system) and its reference, exemplars chosen from the request's pool
// (exemplars.h), a template rendered into chat messages (template.h), and the
// token budget applied (exemplars' analyses, then exemplars, are dropped;
// never the task).
#ifndef CRL_SERVICES_PROMPT_PROMPT_BUILDER_H_
#define CRL_SERVICES_PROMPT_PROMPT_BUILDER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "crl/v1/prompt.pb.h"
#include "lib/prompt/template.h"

namespace crl::prompt {

// The names a template may use (template.h checks them at load):
//   task_name, task_description, format, backend, language, fence,
//   entry_point, reference, abi, signature, has_exemplars ("yes" or ""),
//   exemplars (a list of: index, variant_id, code, speedup_text, analysis,
//   policy_version, fast).
const std::vector<std::string>& TemplateNames();

// Token estimate of a text: bytes / 3.5, rounded up (within about 20% of
// GPT-style BPE tokenizers on code and English).
int EstimateTokens(const std::string& text);

// Thread-safe (immutable after construction).
class PromptBuilder {
 public:
  // `templates` must outlive the builder; `abi_header` is include/crl/kernel.h
  // (shown to native-format models).
  PromptBuilder(const TemplateSet* templates, std::string abi_header)
      : templates_(templates), abi_header_(std::move(abi_header)) {}

  // INVALID_ARGUMENT names the field (a task without its manifest, a pool
  // over 64, ...); OUT_OF_RANGE when the task alone exceeds the budget.
  absl::StatusOr<v1::BuildPromptResponse> Build(const v1::BuildPromptRequest& request) const;

 private:
  const TemplateSet* templates_;
  const std::string abi_header_;
};

}  // namespace crl::prompt

#endif  // CRL_SERVICES_PROMPT_PROMPT_BUILDER_H_
