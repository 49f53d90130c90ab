#include "services/prompt/prompt_setup.h"

#include "absl/strings/str_cat.h"
#include "common/file.h"
#include "common/paths.h"
#include "common/status.h"

namespace crl::prompt {

void BindPromptOptions(OptionSet* set, PromptOptions* o) {
  set->Add("prompts_dir", &o->template_dirs,
           "directories of *.tmpl templates, after the shipped ones (same name: yours win)");
  set->Add("shipped_prompts_dir", &o->shipped_dir,
           "the shipped templates (default: this installation's prompts/)");
  set->Add("abi_header", &o->abi_header,
           "crl/kernel.h shown to native-format models (default: this installation's)");
}

absl::StatusOr<std::unique_ptr<PromptParts>> BuildPromptParts(const PromptOptions& options) {
  std::vector<std::string> dirs;
  const std::string shipped =
      options.shipped_dir.empty() ? FindShippedDir("prompts") : options.shipped_dir;
  if (!shipped.empty()) dirs.push_back(shipped);
  dirs.insert(dirs.end(), options.template_dirs.begin(), options.template_dirs.end());
  std::string abi_path = options.abi_header;
  if (abi_path.empty()) {
    const std::string include = FindShippedDir("include");
    if (include.empty()) return absl::NotFoundError("abi_header: no include/crl/kernel.h found");
    abi_path = include + "/crl/kernel.h";
  }
  CRL_ASSIGN_OR_RETURN(std::string abi, ReadFileToString(abi_path, "ABI header"));
  auto parts = std::make_unique<PromptParts>();
  CRL_ASSIGN_OR_RETURN(parts->templates, TemplateSet::Load(dirs, TemplateNames()));
  parts->builder = std::make_unique<PromptBuilder>(&parts->templates, std::move(abi));
  return parts;
}

}  // namespace crl::prompt
