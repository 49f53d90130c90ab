// crl-prompt's Prometheus metrics. Labels are bounded: parse results are the
// ParseError names.
#ifndef CRL_SERVICES_PROMPT_PROMPT_METRICS_H_
#define CRL_SERVICES_PROMPT_PROMPT_METRICS_H_

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include "crl/v1/prompt.pb.h"

namespace crl::prompt {

// Thread-safe (prometheus-cpp metrics are).
struct PromptMetrics {
  explicit PromptMetrics(prometheus::Registry* registry);

  void ObserveBuild(const v1::BuildPromptResponse& response);
  void CountParse(v1::ParseError error);

  // crl_prompt_builds_total
  prometheus::Counter& builds;
  // crl_prompt_tokens: estimated tokens of built prompts.
  prometheus::Histogram& tokens;
  // crl_prompt_exemplars_shown_total, crl_prompt_exemplars_dropped_total
  // (dropped to fit a token budget).
  prometheus::Counter& exemplars_shown;
  prometheus::Counter& exemplars_dropped;
  // crl_prompt_parses_total{result}: "ok" or the reject ("no_code_block", ...).
  prometheus::Family<prometheus::Counter>& parses;
};

}  // namespace crl::prompt

#endif  // CRL_SERVICES_PROMPT_PROMPT_METRICS_H_
