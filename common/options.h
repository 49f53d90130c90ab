// Options: each component declares a plain struct with documented defaults;
// main() binds its fields to names in an OptionSet, which fills them from a
// YAML file and then from command-line flags (flags win). Only main() sees
// flags; everything below takes the struct.
//
//   ServerOptions opts;                 // defaults in the struct
//   OptionSet set("crl-worker");
//   BindServerOptions(&set, &opts);     // --listen, --metrics_listen, ...
//   set.Add("lanes", &worker.lanes, "CPU lanes for the host backend");
//   CRL_RETURN_IF_ERROR(set.Parse(argc, argv, &positional));
//
// `--config FILE` loads a YAML mapping of the same names before the other
// flags apply. Errors name the key and, for YAML, the file and line. A
// program that binds an option named "config" itself (crl policy init
// --config FILE.json) gives the YAML file up.
#ifndef CRL_COMMON_OPTIONS_H_
#define CRL_COMMON_OPTIONS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace crl {

// Whether a command's first word asks for its usage: help, --help or -h.
bool IsHelpArg(const std::string& arg);

// Not thread-safe; used from main() only.
class OptionSet {
 public:
  explicit OptionSet(std::string program, std::string summary = "");

  // Binds a name to a field. The field's current value is the documented
  // default. Names are snake_case and unique.
  void Add(const std::string& name, std::string* field, std::string help);
  void Add(const std::string& name, bool* field, std::string help);
  void Add(const std::string& name, int* field, std::string help);
  void Add(const std::string& name, int64_t* field, std::string help);
  void Add(const std::string& name, uint64_t* field, std::string help);
  void Add(const std::string& name, double* field, std::string help);
  // Durations as "250ms", "5s", "1m" (absl::ParseDuration); a bare number is seconds.
  void Add(const std::string& name, absl::Duration* field, std::string help);
  // Comma-separated on the command line, a YAML sequence in files.
  void Add(const std::string& name, std::vector<std::string>* field, std::string help);

  // Parses argv[1..]. Recognises --name=value, --name value, --flag / --noflag
  // for bools, --config FILE, --help, and "--" (the rest is positional).
  // Non-flag arguments are appended to `positional` (may be null only when
  // none are expected). Unknown flags are errors. --help, --h and -h ask
  // for the usage (help_requested()), wherever they appear.
  absl::Status Parse(int argc, char** argv, std::vector<std::string>* positional);

  // Applies a YAML mapping. `source` names it in errors ("worker.yaml").
  absl::Status LoadYaml(const std::string& text, const std::string& source);
  absl::Status LoadYamlFile(const std::string& path);

  // Sets one option from text (what a flag does).
  absl::Status Set(const std::string& name, const std::string& value);

  bool help_requested() const { return help_requested_; }

  // For a service main() without positional arguments: parses, and on an
  // error or --help prints to stderr/stdout and returns the exit code (2 or 0).
  // Returns -1 when the program should go on.
  int ParseForMain(int argc, char** argv);
  // A usage text listing every option with its default and help.
  std::string Usage() const;

 private:
  struct Option {
    std::string help;
    std::string default_text;
    bool is_bool = false;
    bool is_list = false;
    std::function<absl::Status(const std::string&)> set;
  };
  void AddOption(const std::string& name, Option option);

  std::string program_;
  std::string summary_;
  std::map<std::string, Option> options_;
  bool help_requested_ = false;
};

}  // namespace crl

#endif  // CRL_COMMON_OPTIONS_H_
