#include "lib/prompt/template.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/file.h"
#include "common/hash.h"

namespace crl::prompt {

struct PromptTemplate::Node {
  enum Kind { kText, kValue, kSection, kInverted } kind = kText;
  std::string text;  // kText: the text; otherwise the name
  std::vector<Node> children;
};

namespace {

namespace fs = std::filesystem;
using Node = PromptTemplate::Node;

int LineAt(const std::string& text, size_t pos, int first_line) {
  return first_line + static_cast<int>(std::count(text.begin(), text.begin() + pos, '\n'));
}

// Parses one part (system or user) into nodes.
absl::StatusOr<std::vector<Node>> ParsePart(const std::string& text, const std::string& source,
                                           int first_line, const std::set<std::string>& known) {
  std::vector<Node> root;
  std::vector<std::vector<Node>*> stack = {&root};
  std::vector<std::pair<std::string, int>> open;  // section name, line
  size_t pos = 0;
  auto error = [&](size_t at, const std::string& what) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ":", LineAt(text, at, first_line), ": ", what));
  };
  while (pos < text.size()) {
    const size_t tag = text.find("{{", pos);
    if (tag == std::string::npos) {
      stack.back()->push_back({Node::kText, text.substr(pos), {}});
      break;
    }
    if (tag > pos) stack.back()->push_back({Node::kText, text.substr(pos, tag - pos), {}});
    const size_t end = text.find("}}", tag + 2);
    if (end == std::string::npos) return error(tag, "'{{' without '}}'");
    std::string inner(absl::StripAsciiWhitespace(text.substr(tag + 2, end - tag - 2)));
    pos = end + 2;
    if (inner.empty()) return error(tag, "empty tag {{}}");
    const char sigil = inner[0];
    // A section, closing or comment tag alone on its line takes the line
    // with it (Mustache's "standalone" tags), so templates can put them on
    // lines of their own without leaving blank lines behind.
    if (sigil == '#' || sigil == '^' || sigil == '/' || sigil == '!') {
      const size_t line_start = text.rfind('\n', tag == 0 ? 0 : tag - 1);
      const size_t from = line_start == std::string::npos || tag == 0 ? 0 : line_start + 1;
      size_t line_end = text.find('\n', pos);
      if (line_end == std::string::npos) line_end = text.size();
      const bool alone_before =
          absl::StripAsciiWhitespace(absl::string_view(text).substr(from, tag - from)).empty();
      const bool alone_after =
          absl::StripAsciiWhitespace(absl::string_view(text).substr(pos, line_end - pos)).empty();
      if (alone_before && alone_after) {
        auto& nodes = *stack.back();
        if (!nodes.empty() && nodes.back().kind == Node::kText && tag > from) {
          std::string& prev = nodes.back().text;
          prev.erase(prev.size() - std::min(prev.size(), tag - from));
        }
        pos = line_end < text.size() ? line_end + 1 : line_end;
      }
    }
    if (sigil == '!') continue;
    std::string name = sigil == '#' || sigil == '^' || sigil == '/'
                           ? std::string(absl::StripAsciiWhitespace(inner.substr(1)))
                           : inner;
    if (!known.count(name)) {
      return error(tag, absl::StrCat("unknown name '", name, "' (known: ",
                                     absl::StrJoin(known, ", "), ")"));
    }
    if (sigil == '#' || sigil == '^') {
      stack.back()->push_back({sigil == '#' ? Node::kSection : Node::kInverted, name, {}});
      stack.push_back(&stack.back()->back().children);
      open.push_back({name, LineAt(text, tag, first_line)});
    } else if (sigil == '/') {
      if (open.empty() || open.back().first != name) {
        return error(tag, absl::StrCat("{{/", name, "}} closes ",
                                       open.empty() ? "no section" : "{{#" + open.back().first + "}}"));
      }
      open.pop_back();
      stack.pop_back();
    } else {
      stack.back()->push_back({Node::kValue, name, {}});
    }
  }
  if (!open.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ":", open.back().second, ": {{#",
                                                   open.back().first, "}} is never closed"));
  }
  return root;
}

// Looks `name` up from the innermost context outwards.
const std::string* FindValue(const std::vector<const TemplateContext*>& scopes,
                             const std::string& name) {
  for (auto it = scopes.rbegin(); it != scopes.rend(); ++it) {
    auto v = (*it)->values.find(name);
    if (v != (*it)->values.end()) return &v->second;
  }
  return nullptr;
}

const std::vector<TemplateContext>* FindList(const std::vector<const TemplateContext*>& scopes,
                                             const std::string& name) {
  for (auto it = scopes.rbegin(); it != scopes.rend(); ++it) {
    auto l = (*it)->lists.find(name);
    if (l != (*it)->lists.end()) return &l->second;
  }
  return nullptr;
}

void RenderNodes(const std::vector<Node>& nodes, std::vector<const TemplateContext*>* scopes,
                 std::string* out) {
  for (const Node& n : nodes) {
    switch (n.kind) {
      case Node::kText: out->append(n.text); break;
      case Node::kValue:
        if (const std::string* v = FindValue(*scopes, n.text)) out->append(*v);
        break;
      case Node::kSection:
      case Node::kInverted: {
        const auto* list = FindList(*scopes, n.text);
        const std::string* value = FindValue(*scopes, n.text);
        const bool present = (list && !list->empty()) || (value && !value->empty());
        if (n.kind == Node::kInverted) {
          if (!present) RenderNodes(n.children, scopes, out);
        } else if (list && !list->empty()) {
          for (const TemplateContext& item : *list) {
            scopes->push_back(&item);
            RenderNodes(n.children, scopes, out);
            scopes->pop_back();
          }
        } else if (present) {
          RenderNodes(n.children, scopes, out);
        }
        break;
      }
    }
  }
}

}  // namespace

absl::StatusOr<PromptTemplate> PromptTemplate::Parse(const std::string& name,
                                                     const std::string& text,
                                                     const std::string& source,
                                                     const std::vector<std::string>& known_names) {
  const std::set<std::string> known(known_names.begin(), known_names.end());
  // Split at "=== system" / "=== user" lines.
  std::string parts[2];
  int first_line[2] = {0, 0};
  int current = -1, line_no = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    const std::string line = text.substr(pos, nl - pos);
    ++line_no;
    const std::string trimmed(absl::StripTrailingAsciiWhitespace(line));
    if (trimmed == "=== system" || trimmed == "=== user") {
      current = trimmed == "=== system" ? 0 : 1;
      if (first_line[current] != 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(source, ":", line_no, ": a second '", trimmed, "' line"));
      }
      first_line[current] = line_no + 1;
    } else if (current >= 0) {
      parts[current] += line;
      if (nl < text.size()) parts[current] += '\n';
    }  // before the first section: a free-form header (a comment for people)
    pos = nl + 1;
  }
  if (first_line[0] == 0 || first_line[1] == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": a template needs a '=== system' and a '=== user' line"));
  }
  PromptTemplate t;
  t.name_ = name;
  t.version_ = absl::StrCat(name, "@", Sha256Hex(text).substr(0, 8));
  for (int i = 0; i < 2; ++i) {
    // One trailing newline at most: the parts are messages.
    while (parts[i].size() >= 2 && parts[i].compare(parts[i].size() - 2, 2, "\n\n") == 0) {
      parts[i].pop_back();
    }
    auto nodes = ParsePart(parts[i], source, first_line[i], known);
    if (!nodes.ok()) return nodes.status();
    (i == 0 ? t.system_ : t.user_) = std::make_shared<const std::vector<Node>>(std::move(*nodes));
  }
  return t;
}

PromptTemplate::Rendered PromptTemplate::Render(const TemplateContext& context) const {
  Rendered r;
  std::vector<const TemplateContext*> scopes = {&context};
  RenderNodes(*system_, &scopes, &r.system);
  RenderNodes(*user_, &scopes, &r.user);
  r.system = std::string(absl::StripTrailingAsciiWhitespace(r.system));
  r.user = std::string(absl::StripTrailingAsciiWhitespace(r.user));
  return r;
}

absl::StatusOr<TemplateSet> TemplateSet::Load(const std::vector<std::string>& dirs,
                                              const std::vector<std::string>& known_names) {
  if (dirs.empty()) return absl::InvalidArgumentError("prompts: no template directory");
  TemplateSet set;
  for (const std::string& dir : dirs) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
      return absl::NotFoundError(absl::StrCat("prompts: ", dir, " is not a directory"));
    }
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      if (e.path().extension() == ".tmpl") files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    for (const fs::path& f : files) {
      auto text = ReadFileToString(f.string(), "prompt template");
      if (!text.ok()) return text.status();
      auto t = PromptTemplate::Parse(f.stem().string(), *text, f.string(), known_names);
      if (!t.ok()) return t.status();
      set.templates_.insert_or_assign(f.stem().string(), std::move(*t));
    }
  }
  if (set.templates_.empty()) {
    return absl::NotFoundError(
        absl::StrCat("prompts: no *.tmpl file in ", absl::StrJoin(dirs, ", ")));
  }
  return set;
}

absl::StatusOr<const PromptTemplate*> TemplateSet::Find(const std::string& name) const {
  auto it = templates_.find(name);
  if (it == templates_.end()) {
    return absl::NotFoundError(absl::StrCat("template '", name, "' is not loaded (loaded: ",
                                            absl::StrJoin(Names(), ", "), ")"));
  }
  return &it->second;
}

std::vector<std::string> TemplateSet::Names() const {
  std::vector<std::string> names;
  for (const auto& [name, t] : templates_) names.push_back(name);
  return names;
}

}  // namespace crl::prompt
