// Prometheus metrics: one registry per process, injected into each
// component's metrics struct (see RpcMetrics below for the pattern), exposed
// over HTTP on its own port. Names are in base units (`_seconds`, `_bytes`),
// counters end in `_total`, label values are bounded (never task ids, hashes
// or free text).
#ifndef CRL_COMMON_METRICS_H_
#define CRL_COMMON_METRICS_H_

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"

namespace crl {

// The project version, from CMake.
const char* CrlVersion();

// Histogram buckets for latencies from 100 µs to ~100 s (seconds).
prometheus::Histogram::BucketBoundaries LatencyBuckets();

// Serves a registry at http://LISTEN/metrics in Prometheus' text format.
// (cpp-httplib rather than prometheus-cpp's civetweb Exposer: civetweb's
// small fixed thread stacks cannot hold the static TLS that LibTorch with
// OpenBLAS loads, so its worker threads failed to start in those services.)
// Thread-safe.
class MetricsServer {
 public:
  // `listen` is HOST:PORT; port 0 picks a free port (see port()).
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Start(
      const std::string& listen, std::shared_ptr<prometheus::Registry> registry);
  ~MetricsServer();
  int port() const { return port_; }

  struct Http;

 private:
  MetricsServer() = default;
  std::unique_ptr<Http> http_;
  std::thread thread_;
  int port_ = 0;
};

// crl_build_info{component,version} 1 — lets dashboards join on version.
void RegisterBuildInfo(prometheus::Registry* registry, const std::string& component);

// Metrics of a gRPC server, kept by the interceptor in server.cc.
struct RpcMetrics {
  explicit RpcMetrics(prometheus::Registry* registry);
  // crl_rpc_requests_total{method, code}
  prometheus::Family<prometheus::Counter>& requests;
  // crl_rpc_duration_seconds{method}
  prometheus::Family<prometheus::Histogram>& duration;
  // crl_rpc_in_flight
  prometheus::Gauge& in_flight;
  // crl_ready: 1 while the readiness service reports SERVING.
  prometheus::Gauge& ready;
};

}  // namespace crl

#endif  // CRL_COMMON_METRICS_H_
