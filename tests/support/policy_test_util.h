// Helpers of the policy tests: temporary directories and the Python
// reference (Debian's python3-torch; CRL_TEST_PYTHON overrides).
#ifndef CRL_TESTS_SUPPORT_POLICY_TEST_UTIL_H_
#define CRL_TESTS_SUPPORT_POLICY_TEST_UTIL_H_

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "common/file.h"
#include "lib/policy/config.h"
#include "tests/support/temp_dir.h"

namespace crl::policy {

// The tests' random-model shape: 2 layers, hidden 32, 4 query heads of 8
// over 2 key/value heads; q/k/v bias for Qwen2, q/k RMSNorm for Qwen3.
inline ModelConfig TinyConfig(Family family, int vocab, int max_positions, int intermediate = 48) {
  ModelConfig c;
  c.family = family;
  c.vocab_size = vocab;
  c.hidden_size = 32;
  c.intermediate_size = intermediate;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 8;
  c.max_position_embeddings = max_positions;
  c.torch_dtype = "float32";
  c.attention_bias = family == Family::kQwen2;
  c.qk_norm = family == Family::kQwen3;
  return c;
}

using crl::testing::TempDir;  // tests/support/temp_dir.h

inline std::string Python() {
  const char* p = std::getenv("CRL_TEST_PYTHON");
  return p ? p : "/usr/bin/python3";
}

// Runs tests/policy/reference_model.py on `model_dir` with `input`.
inline absl::StatusOr<nlohmann::json> RunReference(const std::string& model_dir,
                                                   const nlohmann::json& input) {
  TempDir io;
  const std::string in = io.path() + "/in.json", out = io.path() + "/out.json";
  if (!WriteStringToFile(in, input.dump()).ok()) return absl::InternalError("cannot write input");
  const std::string cmd = absl::StrCat(Python(), " ", CRL_SOURCE_DIR,
                                       "/tests/policy/reference_model.py ", model_dir, " ", in,
                                       " ", out, " 2>&1");
  if (std::system(cmd.c_str()) != 0) return absl::InternalError("the reference failed: " + cmd);
  auto text = ReadFileToString(out, "reference output");
  if (!text.ok()) return text.status();
  return nlohmann::json::parse(*text);
}

}  // namespace crl::policy

#endif  // CRL_TESTS_SUPPORT_POLICY_TEST_UTIL_H_
