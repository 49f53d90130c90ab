// Model shapes the policy benchmarks share (crl-bench-trainer,
// crl-bench-sampler, and tools/bench/policy_torch_bench.py's PRESETS):
// Qwen2.5's published config.json values, and the embedded policy's.
#ifndef CRL_TOOLS_BENCH_POLICY_PRESETS_H_
#define CRL_TOOLS_BENCH_POLICY_PRESETS_H_

#include <string>

#include "absl/status/statusor.h"
#include "common/paths.h"
#include "lib/policy/config.h"

namespace crl::bench {

inline absl::StatusOr<policy::ModelConfig> PolicyPreset(const std::string& name) {
  if (name == "embedded") {
    return policy::LoadModelConfig(FindShippedDir("models/embedded") + "/config.json");
  }
  policy::ModelConfig c;
  c.family = policy::Family::kQwen2;
  c.vocab_size = 151936;
  c.rope_theta = 1e6;
  c.max_position_embeddings = 32768;
  c.tie_word_embeddings = true;
  c.attention_bias = true;
  c.torch_dtype = "float32";
  if (name == "qwen2.5-0.5b") {
    c.hidden_size = 896;
    c.intermediate_size = 4864;
    c.num_hidden_layers = 24;
    c.num_attention_heads = 14;
    c.num_key_value_heads = 2;
  } else if (name == "qwen2.5-1.5b") {
    c.hidden_size = 1536;
    c.intermediate_size = 8960;
    c.num_hidden_layers = 28;
    c.num_attention_heads = 12;
    c.num_key_value_heads = 2;
  } else {
    return absl::InvalidArgumentError("preset: embedded, qwen2.5-0.5b or qwen2.5-1.5b");
  }
  c.head_dim = c.hidden_size / c.num_attention_heads;
  return c;
}

}  // namespace crl::bench

#endif  // CRL_TOOLS_BENCH_POLICY_PRESETS_H_
