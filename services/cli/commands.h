// Subcommands of the `crl` CLI. Each takes its own argv (argv[0] is the
// subcommand name) and returns the process exit code.
#ifndef CRL_SERVICES_CLI_COMMANDS_H_
#define CRL_SERVICES_CLI_COMMANDS_H_

#include <google/protobuf/message.h>

#include <string>

#include "absl/status/status.h"
#include "common/client.h"
#include "common/options.h"

namespace crl::cli {

int HealthCommand(int argc, char** argv);
int EvalCommand(int argc, char** argv);
int DemoCommand(int argc, char** argv);
int BenchCommand(int argc, char** argv);
int BaselineCommand(int argc, char** argv);
int PromptCommand(int argc, char** argv);
int PolicyCommand(int argc, char** argv);
int SampleCommand(int argc, char** argv);
int RunCommand(int argc, char** argv);
int UpCommand(int argc, char** argv);
int DownCommand(int argc, char** argv);
int StatusCommand(int argc, char** argv);
int QuickstartCommand(int argc, char** argv);
int RewardCommand(int argc, char** argv);
int HacksCommand(int argc, char** argv);
int PortReportCommand(int argc, char** argv);

// Prints `status` (if not OK) and the usage; returns 0 for --help, else 2.
int UsageError(const OptionSet& flags, const absl::Status& status);
// The orchestrator a client command talks to and how, from the
// environment before any flag: CRL_ORCHESTRATOR (HOST:PORT), CRL_TOKEN_FILE
// (or CRL_AUTH_TOKEN_FILE), CRL_TLS (1 or true), CRL_TLS_CA_FILE,
// CRL_TLS_CERT_FILE and CRL_TLS_KEY_FILE (mutual TLS); the Python client's
// CrlClient.from_environment reads the same. Flags bound after it win;
// --help shows the values it set as the defaults.
void OrchestratorFromEnvironment(std::string* address, ClientOptions* client);
// Prints an infrastructure error; returns 3.
int Fail(const absl::Status& status);
// A message as JSON with the .proto field names (indented when `pretty`;
// no trailing newline), what every --json prints.
std::string ProtoJson(const google::protobuf::Message& message, bool pretty);

}  // namespace crl::cli

#endif  // CRL_SERVICES_CLI_COMMANDS_H_
