// The runtime every crl service main() uses: gRPC callback server with
// health (liveness on "", readiness on the component's service name),
// reflection, optional TLS and bearer-token auth, Prometheus metrics on a
// separate port, and a graceful drain on SIGTERM/SIGINT.
//
//   int main(int argc, char** argv) {
//     crl::BlockTerminationSignals();          // before any thread exists
//     ServerOptions server_opts; ...parse...
//     crl::ServiceHost host("crl-worker", "crl.v1.EvalService", server_opts);
//     CRL_CHECK_OK(host.Init());
//     MyService service(..., host.call_env(&executor));
//     host.AddService(&service);
//     host.AddExecutor(&executor);
//     CRL_CHECK_OK(host.Start());
//     host.SetReady(true);                      // once warm
//     return host.RunUntilSignal();
//   }
#ifndef CRL_COMMON_SERVER_H_
#define CRL_COMMON_SERVER_H_

#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/auth.h"
#include "common/context.h"
#include "common/executor.h"
#include "common/metrics.h"
#include "common/options.h"

namespace crl {

struct ServerOptions {
  // gRPC address HOST:PORT; port 0 picks a free one (printed at start).
  std::string listen = "127.0.0.1:0";
  // Prometheus HTTP address HOST:PORT for /metrics; port 0 picks a free one.
  std::string metrics_listen = "127.0.0.1:0";
  // TLS: server certificate chain and private key (PEM). Both or neither.
  std::string tls_cert_file;
  std::string tls_key_file;
  // TLS: when set, clients must present a certificate signed by this CA.
  std::string tls_client_ca_file;
  // File holding the bearer token every RPC must carry; empty = no auth.
  std::string auth_token_file;
  // After SIGTERM: readiness goes NOT_SERVING, then new calls are still
  // accepted for this long so load balancers can notice.
  absl::Duration drain_delay = absl::Seconds(1);
  // Then in-flight calls get this long to finish before being cancelled.
  absl::Duration shutdown_timeout = absl::Seconds(20);
  // Largest request/response message (bytes): tensors travel inline.
  int max_message_bytes = 512 << 20;
  // debug, info, warning, error.
  std::string log_level = "info";
};

// Binds --listen, --metrics_listen, --tls_*, --auth_token_file, --drain_delay,
// --shutdown_timeout, --max_message_bytes, --log_level.
void BindServerOptions(OptionSet* set, ServerOptions* options);

// Blocks SIGTERM and SIGINT in the calling thread and every thread created
// after it, so ServiceHost::RunUntilSignal() can sigwait() for them. Call
// first thing in main().
void BlockTerminationSignals();

// What a handler needs to serve a call: who may call, where heavy work runs.
struct CallEnv {
  const Authenticator* auth = nullptr;
  // Heavy work runs here; null runs inline on the reactor thread (cheap RPCs).
  BoundedExecutor* executor = nullptr;
};

// Serves a unary callback RPC: checks the token, then runs `work` on the
// executor (or inline), then finishes the call with its status. A full
// executor answers RESOURCE_EXHAUSTED; a call cancelled or past its deadline
// before it starts answers CANCELLED / DEADLINE_EXCEEDED without running.
// `work` gets the call's RequestContext (its deadline, and cancellation when
// the client cancels or disconnects) to pass down to every step that waits.
// `work` must not throw. The response it fills must outlive the call (gRPC
// owns it in the callback API).
using UnaryWork = std::function<grpc::Status(const RequestContext& context)>;
grpc::ServerUnaryReactor* ServeUnary(grpc::CallbackServerContext* context, const CallEnv& env,
                                     UnaryWork work);

// A gRPC deadline as an absl::Time (InfiniteFuture for "none").
absl::Time DeadlineFromGrpc(std::chrono::system_clock::time_point deadline);

class ServiceHost {
 public:
  // `readiness_service` is the health-check name flipped by SetReady()
  // (conventionally the component's main service, e.g. "crl.v1.EvalService").
  ServiceHost(std::string component, std::string readiness_service, ServerOptions options);
  ~ServiceHost();

  // Loads the token and TLS files, sets up logging, registry and the
  // metrics HTTP server. Call once, before AddService.
  absl::Status Init();

  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }
  const Authenticator* auth() const { return &auth_; }
  CallEnv call_env(BoundedExecutor* executor) const { return CallEnv{&auth_, executor}; }

  // Services and executors must outlive the host. Executors are shut down
  // after the gRPC server (so in-flight work finishes first).
  void AddService(grpc::Service* service);
  void AddExecutor(BoundedExecutor* executor);

  // Builds and starts the gRPC server. Liveness ("") is SERVING, readiness
  // NOT_SERVING until SetReady(true). Prints one line to stdout:
  //   "<component> listening grpc=HOST:PORT metrics=HOST:PORT".
  absl::Status Start();
  void SetReady(bool ready);

  int port() const { return port_; }
  int metrics_port() const { return metrics_ ? metrics_->port() : 0; }

  // Waits for SIGTERM/SIGINT, then Shutdown(). Returns the process exit code.
  int RunUntilSignal();
  // The drain sequence: readiness off, drain delay, the drain hook, bounded
  // server shutdown, executors stopped, metrics stopped last. Idempotent.
  void Shutdown();
  // Runs during Shutdown() before the server stops taking calls: a service
  // with long waits or open streams ends them here (the trainer finishes
  // its step, checkpoints and closes its version streams).
  void SetDrainHook(std::function<void()> hook) { drain_hook_ = std::move(hook); }

 private:
  const std::string component_;
  const std::string readiness_service_;
  const ServerOptions options_;
  Authenticator auth_;
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<RpcMetrics> rpc_metrics_;
  std::unique_ptr<MetricsServer> metrics_;
  std::shared_ptr<grpc::ServerCredentials> credentials_;
  std::vector<grpc::Service*> services_;
  std::vector<BoundedExecutor*> executors_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  bool shut_down_ = false;
  std::function<void()> drain_hook_;
};

}  // namespace crl

#endif  // CRL_COMMON_SERVER_H_
