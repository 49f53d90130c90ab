#include "services/sampler/sampler_metrics.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace crl::sampler {

SamplerMetrics::SamplerMetrics(prometheus::Registry* r)
    : requests(prometheus::BuildCounter()
                   .Name("crl_sampler_requests_total")
                   .Help("Sample requests, by backend and status code")
                   .Register(*r)),
      completions(prometheus::BuildCounter().Name("crl_sampler_completions_total").Help("Completions returned").Register(*r).Add({})),
      prompt_tokens(prometheus::BuildCounter().Name("crl_sampler_prompt_tokens_total").Help("Prompt tokens of answered requests").Register(*r).Add({})),
      completion_tokens(prometheus::BuildCounter().Name("crl_sampler_completion_tokens_total").Help("Completion tokens returned").Register(*r).Add({})),
      time_to_first_token(prometheus::BuildHistogram()
                              .Name("crl_sampler_time_to_first_token_seconds")
                              .Help("From a request to its first token")
                              .Register(*r)
                              .Add({}, prometheus::Histogram::BucketBoundaries{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30})),
      request_seconds(prometheus::BuildHistogram()
                          .Name("crl_sampler_request_seconds")
                          .Help("Wall time of a Sample request")
                          .Register(*r)
                          .Add({}, prometheus::Histogram::BucketBoundaries{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300})),
      tokens_per_second(prometheus::BuildGauge().Name("crl_sampler_tokens_per_second").Help("Completion tokens per second of the last request").Register(*r).Add({})),
      retries(prometheus::BuildCounter().Name("crl_sampler_retries_total").Help("Retried endpoint attempts, by cause").Register(*r)),
      endpoint_errors(prometheus::BuildCounter().Name("crl_sampler_endpoint_errors_total").Help("Failed endpoint attempts, by HTTP status or transport error").Register(*r)),
      queue_depth(prometheus::BuildGauge().Name("crl_sampler_queue_depth").Help("Requests waiting for a slot or a connection").Register(*r).Add({})),
      active_sequences(prometheus::BuildGauge().Name("crl_sampler_active_sequences").Help("Sequences being decoded in process").Register(*r).Add({})),
      policy_version(prometheus::BuildGauge().Name("crl_sampler_policy_version").Help("The policy version new requests get").Register(*r).Add({})),
      policy_updates(prometheus::BuildCounter().Name("crl_sampler_policy_updates_total").Help("Policy versions taken up, by result").Register(*r)) {}

void SamplerMetrics::ObserveRequest(const std::string& backend, const absl::Status& status,
                                    const v1::SampleResponse* response) {
  requests.Add({{"backend", backend}, {"code", absl::AsciiStrToLower(absl::StatusCodeToString(status.code()))}})
      .Increment();
  if (!status.ok() || !response) return;
  completions.Increment(response->completions_size());
  prompt_tokens.Increment(response->prompt_tokens());
  completion_tokens.Increment(response->completion_tokens());
  time_to_first_token.Observe(response->timings().first_token_seconds());
  request_seconds.Observe(response->timings().total_seconds());
  if (response->timings().total_seconds() > 0) {
    tokens_per_second.Set(response->completion_tokens() / response->timings().total_seconds());
  }
}

}  // namespace crl::sampler
