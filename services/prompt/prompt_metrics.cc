#include "services/prompt/prompt_metrics.h"

#include "lib/reward/names.h"
#include "services/prompt/completion_parser.h"

namespace crl::prompt {

PromptMetrics::PromptMetrics(prometheus::Registry* r)
    : builds(prometheus::BuildCounter()
                 .Name("crl_prompt_builds_total")
                 .Help("Prompts built")
                 .Register(*r)
                 .Add({})),
      tokens(prometheus::BuildHistogram()
                 .Name("crl_prompt_tokens")
                 .Help("Estimated tokens of built prompts")
                 .Register(*r)
                 .Add({}, prometheus::Histogram::BucketBoundaries{256, 512, 1024, 2048, 4096,
                                                                   8192, 16384, 32768, 65536})),
      exemplars_shown(prometheus::BuildCounter()
                          .Name("crl_prompt_exemplars_shown_total")
                          .Help("Exemplars shown in built prompts")
                          .Register(*r)
                          .Add({})),
      exemplars_dropped(prometheus::BuildCounter()
                            .Name("crl_prompt_exemplars_dropped_total")
                            .Help("Exemplars dropped to fit a token budget")
                            .Register(*r)
                            .Add({})),
      parses(prometheus::BuildCounter()
                 .Name("crl_prompt_parses_total")
                 .Help("Completions parsed, by result (ok or the reject reason)")
                 .Register(*r)) {}

void PromptMetrics::ObserveBuild(const v1::BuildPromptResponse& response) {
  builds.Increment();
  tokens.Observe(response.estimated_tokens());
  exemplars_shown.Increment(response.exemplar_ids_size());
  exemplars_dropped.Increment(response.exemplars_dropped());
}

void PromptMetrics::CountParse(v1::ParseError error) {
  parses.Add({{"result", LabelValue(ParseErrorShortName(error))}}).Increment();
}

}  // namespace crl::prompt
