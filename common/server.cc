#include "common/server.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/support/server_interceptor.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/file.h"
#include "common/logging.h"
#include "common/grpc_status.h"
#include "common/status.h"

namespace crl {
namespace {

// Counts every RPC (health and reflection included) by method and code.
class MetricsInterceptor final : public grpc::experimental::Interceptor {
 public:
  MetricsInterceptor(RpcMetrics* metrics, std::string method)
      : metrics_(metrics), method_(std::move(method)), start_(absl::Now()) {
    metrics_->in_flight.Increment();
  }
  ~MetricsInterceptor() override { metrics_->in_flight.Decrement(); }

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    using grpc::experimental::InterceptionHookPoints;
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
      grpc::Status status = methods->GetSendStatus();
      metrics_->requests
          .Add({{"method", method_}, {"code", std::to_string(status.error_code())}})
          .Increment();
      metrics_->duration.Add({{"method", method_}}, LatencyBuckets())
          .Observe(absl::ToDoubleSeconds(absl::Now() - start_));
    }
    methods->Proceed();
  }

 private:
  RpcMetrics* metrics_;
  std::string method_;
  absl::Time start_;
};

class MetricsInterceptorFactory final
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit MetricsInterceptorFactory(RpcMetrics* metrics) : metrics_(metrics) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    // Method names come from compiled-in services: a bounded label set.
    return new MetricsInterceptor(metrics_, info->method() ? info->method() : "unknown");
  }

 private:
  RpcMetrics* metrics_;
};

}  // namespace

void BindServerOptions(OptionSet* set, ServerOptions* o) {
  set->Add("listen", &o->listen, "gRPC address HOST:PORT (port 0: any free port)");
  set->Add("metrics_listen", &o->metrics_listen,
           "Prometheus /metrics HTTP address HOST:PORT (port 0: any free port)");
  set->Add("tls_cert_file", &o->tls_cert_file, "TLS server certificate chain (PEM)");
  set->Add("tls_key_file", &o->tls_key_file, "TLS server private key (PEM)");
  set->Add("tls_client_ca_file", &o->tls_client_ca_file,
           "CA (PEM) that client certificates must chain to; enables mutual TLS");
  set->Add("auth_token_file", &o->auth_token_file,
           "file with the bearer token every RPC must carry (empty: no auth)");
  set->Add("drain_delay", &o->drain_delay,
           "after SIGTERM, readiness is off this long before the server stops");
  set->Add("shutdown_timeout", &o->shutdown_timeout,
           "time in-flight calls get to finish before they are cancelled");
  set->Add("max_message_bytes", &o->max_message_bytes, "largest gRPC message in bytes");
  set->Add("log_level", &o->log_level, "debug, info, warning or error");
}

void BlockTerminationSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  // A client that disappears must not kill us with SIGPIPE.
  signal(SIGPIPE, SIG_IGN);
}

absl::Time DeadlineFromGrpc(std::chrono::system_clock::time_point deadline) {
  // gRPC's "no deadline" is gpr_inf_future, far beyond any real one.
  if (deadline >= std::chrono::system_clock::now() + std::chrono::hours(24 * 365 * 50)) {
    return absl::InfiniteFuture();
  }
  return absl::FromChrono(deadline);
}

grpc::ServerUnaryReactor* ServeUnary(grpc::CallbackServerContext* context, const CallEnv& env,
                                     UnaryWork work) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (env.auth) {
    grpc::Status auth = env.auth->Check(*context);
    if (!auth.ok()) {
      reactor->Finish(auth);
      return reactor;
    }
  }
  auto run = [context, reactor, work = std::move(work)]() {
    if (context->IsCancelled()) {
      reactor->Finish(grpc::Status(grpc::StatusCode::CANCELLED, "cancelled before start"));
      return;
    }
    if (context->deadline() < std::chrono::system_clock::now()) {
      reactor->Finish(
          grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "deadline passed before start"));
      return;
    }
    RequestContext request(RealClock::Get(), DeadlineFromGrpc(context->deadline()),
                           [context] { return context->IsCancelled(); });
    reactor->Finish(work(request));
  };
  if (env.executor == nullptr) {
    run();
    return reactor;
  }
  absl::Status submitted = env.executor->Submit(std::move(run));
  if (!submitted.ok()) reactor->Finish(ToGrpcStatus(submitted));
  return reactor;
}

ServiceHost::ServiceHost(std::string component, std::string readiness_service,
                         ServerOptions options)
    : component_(std::move(component)),
      readiness_service_(std::move(readiness_service)),
      options_(std::move(options)) {}

ServiceHost::~ServiceHost() { Shutdown(); }

absl::Status ServiceHost::Init() {
  LogLevel level;
  if (!ParseLogLevel(options_.log_level, &level)) {
    return absl::InvalidArgumentError(
        absl::StrCat("log_level: unknown level '", options_.log_level, "'"));
  }
  SetMinLogLevel(level);

  if (!options_.auth_token_file.empty()) {
    CRL_ASSIGN_OR_RETURN(std::string token, ReadTokenFile(options_.auth_token_file));
    auth_ = Authenticator(std::move(token));
  }

  if (options_.tls_cert_file.empty() != options_.tls_key_file.empty()) {
    return absl::InvalidArgumentError("tls_cert_file and tls_key_file must be set together");
  }
  if (!options_.tls_cert_file.empty()) {
    grpc::SslServerCredentialsOptions ssl;
    CRL_ASSIGN_OR_RETURN(std::string cert, ReadFileToString(options_.tls_cert_file, "TLS certificate file"));
    CRL_ASSIGN_OR_RETURN(std::string key, ReadFileToString(options_.tls_key_file, "TLS key file"));
    ssl.pem_key_cert_pairs.push_back({key, cert});
    if (!options_.tls_client_ca_file.empty()) {
      CRL_ASSIGN_OR_RETURN(ssl.pem_root_certs,
                           ReadFileToString(options_.tls_client_ca_file, "TLS client CA file"));
      ssl.client_certificate_request =
          GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
    }
    credentials_ = grpc::SslServerCredentials(ssl);
  } else {
    if (!options_.tls_client_ca_file.empty()) {
      return absl::InvalidArgumentError("tls_client_ca_file needs tls_cert_file and tls_key_file");
    }
    credentials_ = grpc::InsecureServerCredentials();
  }

  registry_ = std::make_shared<prometheus::Registry>();
  RegisterBuildInfo(registry_.get(), component_);
  rpc_metrics_ = std::make_unique<RpcMetrics>(registry_.get());
  if (!options_.metrics_listen.empty()) {
    CRL_ASSIGN_OR_RETURN(metrics_, MetricsServer::Start(options_.metrics_listen, registry_));
  }
  return absl::OkStatus();
}

void ServiceHost::AddService(grpc::Service* service) { services_.push_back(service); }

void ServiceHost::AddExecutor(BoundedExecutor* executor) { executors_.push_back(executor); }

absl::Status ServiceHost::Start() {
  if (!credentials_) return absl::FailedPreconditionError("ServiceHost::Init() not called");
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options_.listen, credentials_, &port_);
  builder.SetMaxReceiveMessageSize(options_.max_message_bytes);
  builder.SetMaxSendMessageSize(options_.max_message_bytes);
  for (grpc::Service* s : services_) builder.RegisterService(s);
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> factories;
  factories.push_back(std::make_unique<MetricsInterceptorFactory>(rpc_metrics_.get()));
  builder.experimental().SetInterceptorCreators(std::move(factories));
  server_ = builder.BuildAndStart();
  if (!server_ || port_ == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", options_.listen));
  }
  auto* health = server_->GetHealthCheckService();
  health->SetServingStatus("", true);
  health->SetServingStatus(readiness_service_, false);

  std::string host = options_.listen.substr(0, options_.listen.rfind(':'));
  std::string metrics_host =
      options_.metrics_listen.substr(0, options_.metrics_listen.rfind(':'));
  std::string line = absl::StrCat(component_, " listening grpc=", host, ":", port_,
                                  " metrics=", metrics_ ? metrics_host : "off", ":",
                                  metrics_port(), "\n");
  std::fputs(line.c_str(), stdout);
  std::fflush(stdout);
  CRL_LOG(INFO) << line.substr(0, line.size() - 1) << (auth_.enabled() ? " auth=token" : "")
                << (options_.tls_cert_file.empty() ? "" : " tls=on");
  return absl::OkStatus();
}

void ServiceHost::SetReady(bool ready) {
  if (!server_) return;
  server_->GetHealthCheckService()->SetServingStatus(readiness_service_, ready);
  rpc_metrics_->ready.Set(ready ? 1 : 0);
  CRL_LOG(INFO) << component_ << (ready ? " ready" : " not ready");
}

int ServiceHost::RunUntilSignal() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  int sig = 0;
  sigwait(&set, &sig);
  CRL_LOG(INFO) << component_ << " received " << (sig == SIGTERM ? "SIGTERM" : "SIGINT")
                << ", draining";
  Shutdown();
  return 0;
}

void ServiceHost::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  if (server_) {
    SetReady(false);
    absl::SleepFor(options_.drain_delay);
    if (drain_hook_) drain_hook_();
    auto deadline = std::chrono::system_clock::now() +
                    absl::ToChronoMilliseconds(options_.shutdown_timeout);
    server_->Shutdown(deadline);
    server_->Wait();
  }
  for (BoundedExecutor* e : executors_) e->Shutdown();
  if (server_) CRL_LOG(INFO) << component_ << " stopped";
  metrics_.reset();
}

}  // namespace crl
