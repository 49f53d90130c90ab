#include "common/options.h"

#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/file.h"

namespace crl {
namespace {

absl::Status BadValue(const std::string& value, const char* want) {
  return absl::InvalidArgumentError(absl::StrCat("expected ", want, ", got '", value, "'"));
}

bool ParseBool(const std::string& v, bool* out) {
  if (v == "true" || v == "1" || v == "yes" || v == "on") return (*out = true), true;
  if (v == "false" || v == "0" || v == "no" || v == "off") return (*out = false), true;
  return false;
}

}  // namespace

OptionSet::OptionSet(std::string program, std::string summary)
    : program_(std::move(program)), summary_(std::move(summary)) {}

void OptionSet::AddOption(const std::string& name, Option option) {
  // Two bindings of one name would make one of them silently dead.
  if (options_.count(name)) std::abort();
  options_.emplace(name, std::move(option));
}

void OptionSet::Add(const std::string& name, std::string* field, std::string help) {
  AddOption(name, {std::move(help), "\"" + *field + "\"", false, false,
                   [field](const std::string& v) {
                     *field = v;
                     return absl::OkStatus();
                   }});
}

void OptionSet::Add(const std::string& name, bool* field, std::string help) {
  AddOption(name, {std::move(help), *field ? "true" : "false", true, false,
                   [field](const std::string& v) {
                     return ParseBool(v, field) ? absl::OkStatus() : BadValue(v, "a boolean");
                   }});
}

void OptionSet::Add(const std::string& name, int* field, std::string help) {
  AddOption(name, {std::move(help), std::to_string(*field), false, false,
                   [field](const std::string& v) {
                     return absl::SimpleAtoi(v, field) ? absl::OkStatus()
                                                       : BadValue(v, "an integer");
                   }});
}

void OptionSet::Add(const std::string& name, int64_t* field, std::string help) {
  AddOption(name, {std::move(help), std::to_string(*field), false, false,
                   [field](const std::string& v) {
                     return absl::SimpleAtoi(v, field) ? absl::OkStatus()
                                                       : BadValue(v, "an integer");
                   }});
}

void OptionSet::Add(const std::string& name, uint64_t* field, std::string help) {
  AddOption(name, {std::move(help), std::to_string(*field), false, false,
                   [field](const std::string& v) {
                     return absl::SimpleAtoi(v, field) ? absl::OkStatus()
                                                       : BadValue(v, "a non-negative integer");
                   }});
}

void OptionSet::Add(const std::string& name, double* field, std::string help) {
  std::ostringstream def;
  def << *field;
  AddOption(name, {std::move(help), def.str(), false, false,
                   [field](const std::string& v) {
                     return absl::SimpleAtod(v, field) ? absl::OkStatus()
                                                       : BadValue(v, "a number");
                   }});
}

void OptionSet::Add(const std::string& name, absl::Duration* field, std::string help) {
  AddOption(name, {std::move(help), absl::FormatDuration(*field), false, false,
                   [field](const std::string& v) {
                     double seconds;
                     if (absl::SimpleAtod(v, &seconds)) {
                       *field = absl::Seconds(seconds);
                       return absl::OkStatus();
                     }
                     return absl::ParseDuration(v, field)
                                ? absl::OkStatus()
                                : BadValue(v, "a duration like 500ms, 5s or 2m");
                   }});
}

void OptionSet::Add(const std::string& name, std::vector<std::string>* field,
                    std::string help) {
  AddOption(name, {std::move(help), absl::StrJoin(*field, ","), false, true,
                   [field](const std::string& v) {
                     field->clear();
                     for (absl::string_view part : absl::StrSplit(v, ',', absl::SkipEmpty())) {
                       field->emplace_back(part);
                     }
                     return absl::OkStatus();
                   }});
}

absl::Status OptionSet::Set(const std::string& name, const std::string& value) {
  auto it = options_.find(name);
  if (it == options_.end()) {
    return absl::InvalidArgumentError(absl::StrCat("unknown option '", name, "'"));
  }
  absl::Status s = it->second.set(value);
  if (!s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("option '", name, "': ", s.message()));
  }
  return absl::OkStatus();
}

bool IsHelpArg(const std::string& arg) { return arg == "help" || arg == "--help" || arg == "-h"; }

absl::Status OptionSet::Parse(int argc, char** argv, std::vector<std::string>* positional) {
  // Flags win over the config file wherever it appears, so collect first.
  std::vector<std::pair<std::string, std::string>> flags;
  std::string config;
  // A program that binds its own "config" option gives up the YAML file.
  const bool yaml = !options_.count("config");
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") {
      for (++i; i < argc; ++i) {
        if (!positional) return absl::InvalidArgumentError("unexpected arguments");
        positional->push_back(argv[i]);
      }
      break;
    }
    if (arg == "-h") {
      help_requested_ = true;
      continue;
    }
    if (arg.size() < 3 || arg.compare(0, 2, "--") != 0) {
      if (!positional) {
        return absl::InvalidArgumentError(absl::StrCat("unexpected argument '", arg, "'"));
      }
      positional->push_back(arg);
      continue;
    }
    std::string body = arg.substr(2);
    std::string name = body, value;
    bool has_value = false;
    if (auto eq = body.find('='); eq != std::string::npos) {
      name = body.substr(0, eq);
      value = body.substr(eq + 1);
      has_value = true;
    }
    if (name == "help" || name == "h") {
      help_requested_ = true;
      continue;
    }
    auto it = options_.find(name);
    if (!has_value && it == options_.end() && name.rfind("no", 0) == 0) {
      auto neg = options_.find(name.substr(2));
      if (neg != options_.end() && neg->second.is_bool) {
        flags.emplace_back(name.substr(2), "false");
        continue;
      }
    }
    if ((name != "config" || !yaml) && it == options_.end()) {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag --", name));
    }
    if (!has_value) {
      if ((name != "config" || !yaml) && it->second.is_bool) {
        value = "true";
      } else if (i + 1 < argc) {
        value = argv[++i];
      } else {
        return absl::InvalidArgumentError(absl::StrCat("flag --", name, " needs a value"));
      }
    }
    if (name == "config" && yaml) {
      config = value;
    } else {
      flags.emplace_back(name, value);
    }
  }
  if (!config.empty()) {
    absl::Status s = LoadYamlFile(config);
    if (!s.ok()) return s;
  }
  for (const auto& [name, value] : flags) {
    absl::Status s = Set(name, value);
    if (!s.ok()) return absl::InvalidArgumentError(absl::StrCat("flag --", s.message()));
  }
  return absl::OkStatus();
}

absl::Status OptionSet::LoadYaml(const std::string& text, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ":", e.mark.line + 1, ": invalid YAML: ", e.msg));
  }
  if (root.IsNull()) return absl::OkStatus();  // empty file
  if (!root.IsMap()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ":", root.Mark().line + 1, ": expected a mapping of option: value"));
  }
  for (const auto& kv : root) {
    std::string key = kv.first.Scalar();
    int line = kv.first.Mark().line + 1;
    auto it = options_.find(key);
    if (it == options_.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ":", line, ": unknown key '", key, "'"));
    }
    std::string value;
    const YAML::Node& v = kv.second;
    if (it->second.is_list && v.IsSequence()) {
      std::vector<std::string> items;
      for (const auto& item : v) {
        if (!item.IsScalar()) {
          return absl::InvalidArgumentError(absl::StrCat(
              source, ":", item.Mark().line + 1, ": key '", key, "': expected a list of scalars"));
        }
        items.push_back(item.Scalar());
      }
      value = absl::StrJoin(items, ",");
    } else if (v.IsScalar()) {
      value = v.Scalar();
    } else if (v.IsNull()) {
      value = "";
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          source, ":", v.Mark().line + 1, ": key '", key, "': expected a scalar value"));
    }
    absl::Status s = it->second.set(value);
    if (!s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ":", line, ": key '", key, "': ", s.message()));
    }
  }
  return absl::OkStatus();
}

absl::Status OptionSet::LoadYamlFile(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFileToString(path, "config file");
  if (!text.ok()) return text.status();
  return LoadYaml(*text, path);
}

int OptionSet::ParseForMain(int argc, char** argv) {
  absl::Status s = Parse(argc, argv, nullptr);
  if (s.ok() && !help_requested_) return -1;
  if (!s.ok()) std::fprintf(stderr, "%s: %s\n", program_.c_str(), std::string(s.message()).c_str());
  std::fputs(Usage().c_str(), s.ok() ? stdout : stderr);
  return s.ok() ? 0 : 2;
}

std::string OptionSet::Usage() const {
  const bool yaml = !options_.count("config");
  std::string out = absl::StrCat("usage: ", program_, yaml ? " [--config FILE.yaml]" : "",
                                 " [--option=value ...]\n");
  if (!summary_.empty()) absl::StrAppend(&out, summary_, "\n");
  if (yaml) {
    absl::StrAppend(&out, "\noptions (YAML keys have the same names; flags win):\n");
    absl::StrAppend(&out, "  --config FILE  YAML file of options, applied before the flags\n");
  } else {
    absl::StrAppend(&out, "\noptions:\n");
  }
  for (const auto& [name, opt] : options_) {
    absl::StrAppend(&out, "  --", name, " (default ", opt.default_text, ")\n      ", opt.help,
                    "\n");
  }
  return out;
}

}  // namespace crl
