// A small policy for the service tests, made the way a user makes one: a
// tokenizer trained on tasks/ with `crl policy tokenizer-train` and a random
// model of a config.json with `crl policy init`.
#ifndef CRL_TESTS_SUPPORT_POLICY_FIXTURE_H_
#define CRL_TESTS_SUPPORT_POLICY_FIXTURE_H_

#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

#include "common/file.h"
#include "tests/support/service_process.h"

namespace crl::testing {

// Returns DIR/model.
inline std::string MakePolicy(const TempDir& dir, const std::string& model_type = "llama") {
  const std::string bin = CRL_BIN_DIR, source = CRL_SOURCE_DIR;
  const std::string m = dir.path() + "/model";
  REQUIRE(WriteStringToFile(dir.path() + "/config.json", R"({
    "model_type": ")" + model_type + R"(", "vocab_size": 512, "hidden_size": 32, "intermediate_size": 64,
    "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
    "max_position_embeddings": 256, "torch_dtype": "float32"})")
              .ok());
  REQUIRE(std::system((bin + "/crl policy tokenizer-train --corpus " + source +
                       "/tasks --vocab 512 --out " + dir.path() + "/tok/tokenizer.json >/dev/null")
                          .c_str()) == 0);
  REQUIRE(std::system((bin + "/crl policy init --config " + dir.path() + "/config.json --out " + m +
                       " --tokenizer " + dir.path() + "/tok/tokenizer.json >/dev/null")
                          .c_str()) == 0);
  return m;
}

}  // namespace crl::testing

#endif  // CRL_TESTS_SUPPORT_POLICY_FIXTURE_H_
