// Prompt templates as files (prompts/*.tmpl), so a researcher changes wording
// without recompiling. A template is a system part and a user part:
//
//   Anything before the first section line is a header for people.
//   === system
//   You optimise {{language}} code ...
//   === user
//   {{#exemplars}}### Variant {{index}} ({{speedup_text}})
//   ```{{fence}}
//   {{code}}
//   ```
//   {{/exemplars}}{{^exemplars}}No earlier variants yet.{{/exemplars}}
//
// A subset of Mustache: {{name}} substitutes a value (no escaping),
// {{#name}}...{{/name}} repeats for each item of a list (or renders once when
// a value is non-empty), {{^name}}...{{/name}} renders when it is empty or
// absent, {{! ... }} inside a part is dropped. Unknown names and unbalanced sections are
// errors naming the file and line, found when the template is loaded.
#ifndef CRL_LIB_PROMPT_TEMPLATE_H_
#define CRL_LIB_PROMPT_TEMPLATE_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace crl::prompt {

// What a template renders: values and lists of nested contexts. A lookup
// that misses walks up to the enclosing context.
struct TemplateContext {
  std::map<std::string, std::string> values;
  std::map<std::string, std::vector<TemplateContext>> lists;
};

class PromptTemplate {
 public:
  // Parses `text`; `source` names it in errors ("prompts/native.tmpl").
  // Every name the template uses must be in `known_names` (values or lists).
  static absl::StatusOr<PromptTemplate> Parse(const std::string& name, const std::string& text,
                                              const std::string& source,
                                              const std::vector<std::string>& known_names);

  const std::string& name() const { return name_; }
  // "<name>@<first 8 hex of the content's SHA-256>".
  const std::string& version() const { return version_; }

  // The rendered system and user parts.
  struct Rendered {
    std::string system;
    std::string user;
  };
  Rendered Render(const TemplateContext& context) const;

  struct Node;

 private:
  std::string name_;
  std::string version_;
  std::shared_ptr<const std::vector<Node>> system_;
  std::shared_ptr<const std::vector<Node>> user_;
};

// Templates by name, loaded from directories at start. Later directories
// override earlier ones by name (the user's over the shipped ones).
// Immutable after loading; thread-safe.
class TemplateSet {
 public:
  // Loads every *.tmpl of each directory in order. An empty directory list,
  // or a file that does not parse, is an error naming the file and line.
  static absl::StatusOr<TemplateSet> Load(const std::vector<std::string>& dirs,
                                          const std::vector<std::string>& known_names);
  // NOT_FOUND naming the templates there are.
  absl::StatusOr<const PromptTemplate*> Find(const std::string& name) const;
  std::vector<std::string> Names() const;

 private:
  std::map<std::string, PromptTemplate> templates_;
};

}  // namespace crl::prompt

#endif  // CRL_LIB_PROMPT_TEMPLATE_H_
