#include "lib/policy/config.h"

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "common/file.h"
#include "common/status.h"

namespace crl::policy {
namespace {

using nlohmann::json;

absl::Status Bad(const std::string& source, const std::string& field, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat(source, ": ", field, ": ", why));
}

// A required positive integer field.
absl::StatusOr<int> Positive(const json& j, const char* key, const std::string& source) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return Bad(source, key, "missing or not an integer");
  const int64_t v = it->get<int64_t>();
  if (v <= 0 || v > (int64_t{1} << 30)) return Bad(source, key, "must be a positive integer");
  return static_cast<int>(v);
}

template <typename T>
T Optional(const json& j, const char* key, T fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  try {
    return it->get<T>();
  } catch (const json::exception&) {
    return fallback;
  }
}

}  // namespace

const char* FamilyName(Family family) {
  switch (family) {
    case Family::kQwen2: return "qwen2";
    case Family::kQwen3: return "qwen3";
    case Family::kMistral: return "mistral";
    default: return "llama";
  }
}

int64_t ModelConfig::ParameterCount() const {
  const int64_t h = hidden_size, q = int64_t{num_attention_heads} * head_dim,
                kv = int64_t{num_key_value_heads} * head_dim;
  int64_t layer = h * q + 2 * h * kv + q * h  // q, k, v, o
                  + 3 * h * intermediate_size  // gate, up, down
                  + 2 * h;                     // two norms
  if (attention_bias) layer += q + 2 * kv;
  if (qk_norm) layer += 2 * head_dim;
  const int64_t embed = int64_t{vocab_size} * h;
  return embed * (tie_word_embeddings ? 1 : 2) + num_hidden_layers * layer + h;
}

absl::StatusOr<ModelConfig> ParseModelConfig(const std::string& text, const std::string& source) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return Bad(source, "(file)", "not a JSON object");
  ModelConfig c;
  const std::string type = Optional<std::string>(j, "model_type", "");
  if (type == "llama") c.family = Family::kLlama;
  else if (type == "qwen2") c.family = Family::kQwen2;
  else if (type == "qwen3") c.family = Family::kQwen3;
  else if (type == "mistral") c.family = Family::kMistral;
  else {
    return Bad(source, "model_type",
               absl::StrCat("'", type, "' is not supported (llama, qwen2, qwen3, mistral)"));
  }
  CRL_ASSIGN_OR_RETURN(c.vocab_size, Positive(j, "vocab_size", source));
  CRL_ASSIGN_OR_RETURN(c.hidden_size, Positive(j, "hidden_size", source));
  CRL_ASSIGN_OR_RETURN(c.intermediate_size, Positive(j, "intermediate_size", source));
  CRL_ASSIGN_OR_RETURN(c.num_hidden_layers, Positive(j, "num_hidden_layers", source));
  CRL_ASSIGN_OR_RETURN(c.num_attention_heads, Positive(j, "num_attention_heads", source));
  c.num_key_value_heads = Optional<int>(j, "num_key_value_heads", c.num_attention_heads);
  if (c.num_key_value_heads <= 0 || c.num_attention_heads % c.num_key_value_heads != 0) {
    return Bad(source, "num_key_value_heads", "must divide num_attention_heads");
  }
  c.head_dim = Optional<int>(j, "head_dim", 0);
  if (c.head_dim == 0) {
    if (c.hidden_size % c.num_attention_heads != 0) {
      return Bad(source, "hidden_size", "not a multiple of num_attention_heads (set head_dim)");
    }
    c.head_dim = c.hidden_size / c.num_attention_heads;
  }
  if (c.head_dim <= 0 || c.head_dim % 2 != 0) return Bad(source, "head_dim", "must be even and positive");
  c.rms_norm_eps = Optional<double>(j, "rms_norm_eps", 1e-6);
  c.rope_theta = Optional<double>(j, "rope_theta", 10000.0);
  c.max_position_embeddings = Optional<int>(j, "max_position_embeddings", 4096);
  c.tie_word_embeddings = Optional<bool>(j, "tie_word_embeddings", false);
  c.attention_bias = c.family == Family::kQwen2 || Optional<bool>(j, "attention_bias", false);
  c.qk_norm = c.family == Family::kQwen3;
  if (c.family == Family::kMistral || Optional<bool>(j, "use_sliding_window", false)) {
    c.sliding_window = Optional<int>(j, "sliding_window", 0);
  }
  c.bos_token_id = Optional<int>(j, "bos_token_id", -1);
  if (auto eos = j.find("eos_token_id"); eos != j.end()) {
    if (eos->is_number_integer()) c.eos_token_ids = {eos->get<int>()};
    else c.eos_token_ids = Optional<std::vector<int>>(j, "eos_token_id", {});
  }
  c.torch_dtype = Optional<std::string>(j, "torch_dtype", "bfloat16");
  if (c.torch_dtype != "float32" && c.torch_dtype != "bfloat16" && c.torch_dtype != "float16") {
    return Bad(source, "torch_dtype", "must be float32, bfloat16 or float16");
  }
  if (auto rs = j.find("rope_scaling"); rs != j.end() && rs->is_object()) {
    RopeScaling& s = c.rope_scaling;
    s.type = Optional<std::string>(*rs, "rope_type", Optional<std::string>(*rs, "type", "none"));
    if (s.type == "default") s.type = "none";
    if (s.type != "none" && s.type != "linear" && s.type != "llama3") {
      return Bad(source, "rope_scaling.rope_type",
                 absl::StrCat("'", s.type, "' is not supported (linear, llama3)"));
    }
    s.factor = Optional<double>(*rs, "factor", 1.0);
    s.low_freq_factor = Optional<double>(*rs, "low_freq_factor", 1.0);
    s.high_freq_factor = Optional<double>(*rs, "high_freq_factor", 4.0);
    s.original_max_position_embeddings =
        Optional<int>(*rs, "original_max_position_embeddings", 8192);
    if (!(s.factor > 0)) return Bad(source, "rope_scaling.factor", "must be positive");
  }
  return c;
}

absl::StatusOr<ModelConfig> LoadModelConfig(const std::string& path) {
  CRL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path, "model config"));
  return ParseModelConfig(text, path);
}

std::string ModelConfigJson(const ModelConfig& c) {
  static const char* kArch[] = {"LlamaForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM",
                                "MistralForCausalLM"};
  json j = {{"architectures", {kArch[static_cast<int>(c.family)]}},
            {"model_type", FamilyName(c.family)},
            {"vocab_size", c.vocab_size},
            {"hidden_size", c.hidden_size},
            {"intermediate_size", c.intermediate_size},
            {"num_hidden_layers", c.num_hidden_layers},
            {"num_attention_heads", c.num_attention_heads},
            {"num_key_value_heads", c.num_key_value_heads},
            {"head_dim", c.head_dim},
            {"rms_norm_eps", c.rms_norm_eps},
            {"rope_theta", c.rope_theta},
            {"max_position_embeddings", c.max_position_embeddings},
            {"tie_word_embeddings", c.tie_word_embeddings},
            {"hidden_act", "silu"},
            {"torch_dtype", c.torch_dtype}};
  if (c.family == Family::kLlama || c.family == Family::kMistral) {
    j["attention_bias"] = c.attention_bias;
  }
  if (c.family == Family::kQwen3) j["attention_bias"] = false;
  if (c.sliding_window > 0) j["sliding_window"] = c.sliding_window;
  if (c.bos_token_id >= 0) j["bos_token_id"] = c.bos_token_id;
  if (c.eos_token_ids.size() == 1) j["eos_token_id"] = c.eos_token_ids[0];
  else if (!c.eos_token_ids.empty()) j["eos_token_id"] = c.eos_token_ids;
  if (c.rope_scaling.type != "none") {
    j["rope_scaling"] = {{"rope_type", c.rope_scaling.type}, {"factor", c.rope_scaling.factor}};
    if (c.rope_scaling.type == "llama3") {
      j["rope_scaling"]["low_freq_factor"] = c.rope_scaling.low_freq_factor;
      j["rope_scaling"]["high_freq_factor"] = c.rope_scaling.high_freq_factor;
      j["rope_scaling"]["original_max_position_embeddings"] =
          c.rope_scaling.original_max_position_embeddings;
    }
  }
  return j.dump(2) + "\n";
}

}  // namespace crl::policy
