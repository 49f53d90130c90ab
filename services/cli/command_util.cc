// The CLI's shared exits and output (commands.h).
#include <google/protobuf/util/json_util.h>

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

std::string ProtoJson(const google::protobuf::Message& message, bool pretty) {
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = pretty;
  options.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(message, &out, options);
  return out;
}

}  // namespace crl::cli
