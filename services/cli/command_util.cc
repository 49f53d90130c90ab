// The CLI's shared exits and output (commands.h).
#include <google/protobuf/util/json_util.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "services/cli/commands.h"

namespace crl::cli {

int UsageError(const OptionSet& flags, const absl::Status& status) {
  if (!status.ok()) std::fprintf(stderr, "error: %s\n\n", std::string(status.message()).c_str());
  std::fputs(flags.Usage().c_str(), status.ok() ? stdout : stderr);
  return status.ok() ? 0 : 2;
}

void OrchestratorFromEnvironment(std::string* address, ClientOptions* client) {
  auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v ? v : "";
  };
  if (std::string v = env("CRL_ORCHESTRATOR"); !v.empty()) *address = v;
  if (std::string v = env("CRL_AUTH_TOKEN_FILE"); !v.empty()) client->auth_token_file = v;
  if (std::string v = env("CRL_TOKEN_FILE"); !v.empty()) client->auth_token_file = v;
  if (std::string v = env("CRL_TLS"); v == "1" || v == "true") client->tls = true;
  if (std::string v = env("CRL_TLS_CA_FILE"); !v.empty()) client->tls_ca_file = v;
  if (std::string v = env("CRL_TLS_CERT_FILE"); !v.empty()) client->tls_cert_file = v;
  if (std::string v = env("CRL_TLS_KEY_FILE"); !v.empty()) client->tls_key_file = v;
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
