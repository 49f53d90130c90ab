// The start sequence every crl service main() shares, written once:
// flags -> options -> runtime (logging, auth, TLS, metrics) -> the service's
// own parts -> server -> warm-up -> ready -> SIGTERM -> drain.
//
//   int main(int argc, char** argv) {
//     crl::ServiceMain service_main({"crl-timing", "crl.v1.TimingService",
//                                    "The timing oracle.", "127.0.0.1:50052",
//                                    {"timing", 4, 64}});
//     crl::TimingOptions options;                      // defaults in the struct
//     crl::BindTimingOptions(service_main.flags(), &options);
//     std::unique_ptr<crl::TimingParts> parts;         // outlives the server
//     return service_main.Run(argc, argv, [&](crl::ServiceSetup& setup) {
//       CRL_ASSIGN_OR_RETURN(parts, crl::BuildTiming(options, setup));
//       setup.AddService(parts->service.get());
//       return absl::OkStatus();
//     });
//   }
#ifndef CRL_COMMON_SERVICE_MAIN_H_
#define CRL_COMMON_SERVICE_MAIN_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/executor.h"
#include "common/options.h"
#include "common/server.h"

namespace crl {

struct ServiceDefinition {
  // "crl-worker": names the process in logs, metrics and the listening line.
  std::string component;
  // Health-check name flipped to SERVING once warm ("crl.v1.EvalService").
  std::string readiness_service;
  // The first lines of --help.
  std::string summary;
  // Default of --listen.
  std::string default_listen = "127.0.0.1:0";
  // Defaults of the request executor (--threads, --max_queue).
  ExecutorOptions executor;
};

// What a service's build step works with. Valid during Run() only.
class ServiceSetup {
 public:
  const ServerOptions& server_options() const { return *server_options_; }
  // Lives as long as the ServiceMain (past Run(): see ServiceMain::registry_).
  prometheus::Registry* registry() const { return host_->registry().get(); }
  // Auth plus the request executor: what the service's handlers need.
  CallEnv call_env() const { return host_->call_env(executor_); }
  // Registers a service; it must outlive Run().
  void AddService(grpc::Service* service) { host_->AddService(service); }
  // Runs after the server started and before readiness turns on (a
  // self-test, a cache warm-up). An error stops the service with exit 1.
  void SetWarmUp(std::function<absl::Status()> warm_up) { warm_up_ = std::move(warm_up); }
  // Runs on SIGTERM after readiness is off, before the server stops
  // (ServiceHost::SetDrainHook).
  void SetDrain(std::function<void()> drain) { host_->SetDrainHook(std::move(drain)); }

 private:
  friend class ServiceMain;
  ServiceSetup(ServiceHost* host, BoundedExecutor* executor, const ServerOptions* options)
      : host_(host), executor_(executor), server_options_(options) {}
  ServiceHost* host_;
  BoundedExecutor* executor_;
  const ServerOptions* server_options_;
  std::function<absl::Status()> warm_up_;
};

// Used from main() only. The constructor blocks SIGTERM/SIGINT, so build the
// ServiceMain before any thread exists.
class ServiceMain {
 public:
  explicit ServiceMain(ServiceDefinition definition);

  // Bind the service's own options here before Run(); the server's
  // (--listen, --tls_*, --auth_token_file, ...) and the executor's
  // (--threads, --max_queue) are bound already.
  OptionSet* flags() { return &flags_; }

  // Parses argv (--help and usage errors return 0 / 2 without starting),
  // starts the runtime, calls `build`, serves until SIGTERM/SIGINT and
  // drains. Returns the process exit code: 1 when start-up failed.
  int Run(int argc, char** argv, const std::function<absl::Status(ServiceSetup&)>& build);
  // Parses argv only (Run skips parsing afterwards): for a main that may do
  // something other than serve (crl-trainer's offline mode). Returns the
  // exit code for --help or a usage error, -1 to go on.
  int Parse(int argc, char** argv);

 private:
  const ServiceDefinition definition_;
  ServerOptions server_options_;
  ExecutorOptions executor_options_;
  OptionSet flags_;
  bool parsed_ = false;
  // The metrics registry of the last Run(), kept past its end: what the
  // build step made lives in main()'s locals, which end after Run() returns,
  // and may still count (a pool's thread letting go of a lane while it
  // stops). Declare the ServiceMain before those locals.
  std::shared_ptr<prometheus::Registry> registry_;
};

}  // namespace crl

#endif  // CRL_COMMON_SERVICE_MAIN_H_
