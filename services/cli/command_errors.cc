// The CLI's shared error exits (commands.h).
#include <cstdio>
#include <string>

#include "services/cli/commands.h"

namespace crl::cli {

int UsageError(const OptionSet& flags, const absl::Status& status) {
  if (!status.ok()) std::fprintf(stderr, "error: %s\n\n", std::string(status.message()).c_str());
  std::fputs(flags.Usage().c_str(), status.ok() ? stdout : stderr);
  return status.ok() ? 0 : 2;
}

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "error: %s\n", status.ToString().c_str());
  return 3;
}

}  // namespace crl::cli
