#include "common/metrics.h"

#include <httplib.h>
#include <prometheus/text_serializer.h>

#include <exception>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/http_listen.h"
#include "common/status.h"

#ifndef CRL_VERSION
#define CRL_VERSION "0.0.0-dev"
#endif

namespace crl {

const char* CrlVersion() { return CRL_VERSION; }

prometheus::Histogram::BucketBoundaries LatencyBuckets() {
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
          0.25,   0.5,     1,      2.5,   5,      10,    25,   50,    100};
}

struct MetricsServer::Http {
  httplib::Server server;
};

MetricsServer::~MetricsServer() {
  if (http_) http_->server.stop();
  if (thread_.joinable()) thread_.join();
}

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(
    const std::string& listen, std::shared_ptr<prometheus::Registry> registry) {
  std::unique_ptr<MetricsServer> m(new MetricsServer());
  m->http_ = std::make_unique<Http>();
  httplib::Server& srv = m->http_->server;
  // Scrapes are rare and cheap: two threads are plenty.
  srv.new_task_queue = [] { return new httplib::ThreadPool(2); };
  srv.Get("/metrics", [registry](const httplib::Request&, httplib::Response& res) {
    res.set_content(prometheus::TextSerializer().Serialize(registry->Collect()),
                    "text/plain; version=0.0.4; charset=utf-8");
  });
  CRL_ASSIGN_OR_RETURN(m->port_, BindHttp(&srv, listen, "metrics"));
  httplib::Server* raw = &srv;
  m->thread_ = std::thread([raw] { raw->listen_after_bind(); });
  return m;
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
