// crl-sampler's Prometheus metrics. Labels are bounded: the backend kind,
// a status code name, a retry cause, an HTTP status class.
#ifndef CRL_SERVICES_SAMPLER_SAMPLER_METRICS_H_
#define CRL_SERVICES_SAMPLER_SAMPLER_METRICS_H_

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <string>

#include "absl/status/status.h"
#include "crl/v1/sampler.pb.h"

namespace crl::sampler {

// Thread-safe (prometheus-cpp metrics are).
struct SamplerMetrics {
  explicit SamplerMetrics(prometheus::Registry* registry);

  // One finished Sample call of `backend` ("libtorch", "openai-http").
  void ObserveRequest(const std::string& backend, const absl::Status& status,
                      const v1::SampleResponse* response);

  // crl_sampler_requests_total{backend, code}
  prometheus::Family<prometheus::Counter>& requests;
  // crl_sampler_completions_total, crl_sampler_prompt_tokens_total,
  // crl_sampler_completion_tokens_total
  prometheus::Counter& completions;
  prometheus::Counter& prompt_tokens;
  prometheus::Counter& completion_tokens;
  // crl_sampler_time_to_first_token_seconds, crl_sampler_request_seconds
  prometheus::Histogram& time_to_first_token;
  prometheus::Histogram& request_seconds;
  // crl_sampler_tokens_per_second: completion tokens / wall time of the last request.
  prometheus::Gauge& tokens_per_second;
  // crl_sampler_retries_total{cause}: connect, reset, timeout, http_429, http_5xx, malformed.
  prometheus::Family<prometheus::Counter>& retries;
  // crl_sampler_endpoint_errors_total{code}: HTTP status or transport error of each failed attempt.
  prometheus::Family<prometheus::Counter>& endpoint_errors;
  // crl_sampler_queue_depth: requests waiting for an engine slot or an endpoint connection.
  prometheus::Gauge& queue_depth;
  // crl_sampler_active_sequences: sequences being decoded in process.
  prometheus::Gauge& active_sequences;
  // crl_sampler_policy_version: the version new requests get.
  prometheus::Gauge& policy_version;
  // crl_sampler_policy_updates_total{result}: ok, failed.
  prometheus::Family<prometheus::Counter>& policy_updates;
};

}  // namespace crl::sampler

#endif  // CRL_SERVICES_SAMPLER_SAMPLER_METRICS_H_
