#include "common/metrics.h"

#include <exception>
#include <vector>

#include "absl/strings/str_cat.h"

#ifndef CRL_VERSION
#define CRL_VERSION "0.0.0-dev"
#endif

namespace crl {

const char* CrlVersion() { return CRL_VERSION; }

prometheus::Histogram::BucketBoundaries LatencyBuckets() {
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
          0.25,   0.5,     1,      2.5,   5,      10,    25,   50,    100};
}

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(
    const std::string& listen, std::shared_ptr<prometheus::Registry> registry) {
  std::unique_ptr<MetricsServer> server(new MetricsServer());
  try {
    // One civetweb thread is plenty for a scrape every few seconds.
    server->exposer_ = std::make_unique<prometheus::Exposer>(listen, 1);
  } catch (const std::exception& e) {
    return absl::UnavailableError(
        absl::StrCat("metrics: cannot listen on ", listen, ": ", e.what()));
  }
  server->exposer_->RegisterCollectable(registry);
  std::vector<int> ports = server->exposer_->GetListeningPorts();
  if (ports.empty()) {
    return absl::UnavailableError(absl::StrCat("metrics: no listening port for ", listen));
  }
  server->port_ = ports.front();
  return server;
}

void RegisterBuildInfo(prometheus::Registry* registry, const std::string& component) {
  prometheus::BuildGauge()
      .Name("crl_build_info")
      .Help("Build of this process; always 1")
      .Register(*registry)
      .Add({{"component", component}, {"version", CrlVersion()}})
      .Set(1);
}

RpcMetrics::RpcMetrics(prometheus::Registry* registry)
    : requests(prometheus::BuildCounter()
                   .Name("crl_rpc_requests_total")
                   .Help("gRPC requests finished, by method and status code")
                   .Register(*registry)),
      duration(prometheus::BuildHistogram()
                   .Name("crl_rpc_duration_seconds")
                   .Help("gRPC request latency, by method")
                   .Register(*registry)),
      in_flight(prometheus::BuildGauge()
                    .Name("crl_rpc_in_flight")
                    .Help("gRPC requests being served")
                    .Register(*registry)
                    .Add({})),
      ready(prometheus::BuildGauge()
                .Name("crl_ready")
                .Help("1 while the readiness health service is SERVING")
                .Register(*registry)
                .Add({})) {}

}  // namespace crl
