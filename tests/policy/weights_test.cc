// Hugging Face config.json and safetensors: the shapes of published models,
// sharded checkpoints, and hostile files (a header is untrusted input).
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/file.h"
#include "lib/policy/config.h"
#include "lib/policy/safetensors.h"
#include "tests/support/policy_test_util.h"

namespace crl::policy {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Qwen2.5-0.5B-Instruct's config.json fields (the published values).
const char kQwen25[] = R"({
  "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2",
  "vocab_size": 151936, "hidden_size": 896, "intermediate_size": 4864,
  "num_hidden_layers": 24, "num_attention_heads": 14, "num_key_value_heads": 2,
  "max_position_embeddings": 32768, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0,
  "sliding_window": 32768, "use_sliding_window": false, "tie_word_embeddings": true,
  "torch_dtype": "bfloat16", "bos_token_id": 151643, "eos_token_id": 151645,
  "hidden_act": "silu", "rope_scaling": null})";

// Llama 3.1's rope_scaling block.
const char kLlama31[] = R"({
  "model_type": "llama", "vocab_size": 128256, "hidden_size": 4096,
  "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
  "num_key_value_heads": 8, "rope_theta": 500000.0, "eos_token_id": [128001, 128008, 128009],
  "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                   "original_max_position_embeddings": 8192, "rope_type": "llama3"}})";

TEST_CASE("config.json of published models", "[policy][config]") {
  auto q = ParseModelConfig(kQwen25, "qwen2.5/config.json");
  REQUIRE(q.ok());
  CHECK(q->family == Family::kQwen2);
  CHECK(q->attention_bias);
  CHECK(q->head_dim == 64);
  CHECK(q->sliding_window == 0);  // use_sliding_window: false
  CHECK(q->tie_word_embeddings);
  CHECK(q->eos_token_ids == std::vector<int>{151645});
  CHECK(q->ParameterCount() == 494032768);  // Qwen2.5-0.5B's published count

  auto l = ParseModelConfig(kLlama31, "llama/config.json");
  REQUIRE(l.ok());
  CHECK(l->rope_scaling.type == "llama3");
  CHECK(l->rope_scaling.factor == 8.0);
  CHECK(l->eos_token_ids.size() == 3);
  CHECK(l->num_key_value_heads == 8);
  CHECK(l->ParameterCount() == 8030261248);  // Llama 3.1 8B

  // Written back and read again: the same model.
  auto again = ParseModelConfig(ModelConfigJson(*l), "again");
  REQUIRE(again.ok());
  CHECK(again->ParameterCount() == l->ParameterCount());
  CHECK(again->rope_scaling.original_max_position_embeddings == 8192);
}

TEST_CASE("config errors name the file and the field", "[policy][config]") {
  auto error = [](json j) {
    auto c = ParseModelConfig(j.dump(), "m/config.json");
    REQUIRE_FALSE(c.ok());
    CHECK(c.status().code() == absl::StatusCode::kInvalidArgument);
    return std::string(c.status().message());
  };
  json base = json::parse(kQwen25);
  json j = base;
  j["model_type"] = "gpt_neox";
  CHECK_THAT(error(j), Catch::Contains("m/config.json: model_type: 'gpt_neox'"));
  j = base;
  j.erase("hidden_size");
  CHECK_THAT(error(j), Catch::Contains("hidden_size"));
  j = base;
  j["num_key_value_heads"] = 3;
  CHECK_THAT(error(j), Catch::Contains("num_key_value_heads"));
  j = base;
  j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4}};
  CHECK_THAT(error(j), Catch::Contains("rope_scaling.rope_type: 'yarn'"));
  j = base;
  j["torch_dtype"] = "int8";
  CHECK_THAT(error(j), Catch::Contains("torch_dtype"));
  CHECK(LoadModelConfig("/nonexistent/config.json").status().code() == absl::StatusCode::kNotFound);
}

std::string Bytes(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

TEST_CASE("safetensors: round trip, shards, atomic writes", "[policy][safetensors]") {
  TempDir dir;
  const std::string a = Bytes({1, 2, 3, 4, 5, 6}), b = Bytes({7, 8});
  std::vector<NamedTensor> tensors = {{"a.weight", {DType::kF32, {2, 3}, a}},
                                      {"b.bias", {DType::kF32, {2}, b}}};
  REQUIRE(WriteSafetensors(dir.path() + "/x.safetensors", tensors, {{"step", "3"}}).ok());
  auto f = SafetensorsFile::Open(dir.path() + "/x.safetensors");
  REQUIRE(f.ok());
  REQUIRE((*f)->Find("a.weight") != nullptr);
  CHECK((*f)->Find("a.weight")->shape == std::vector<int64_t>{2, 3});
  CHECK((*f)->Find("a.weight")->bytes == a);
  CHECK((*f)->Find("b.bias")->bytes == b);
  CHECK((*f)->metadata().at("step") == "3");
  CHECK((*f)->metadata().at("format") == "pt");
  // No temporary file is left behind.
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir.path())) files += e.is_regular_file();
  CHECK(files == 1);

  // Sharded: more than one file, an index, the same tensors.
  TempDir sharded;
  REQUIRE(WriteWeights(sharded.path(), tensors, /*max_shard_bytes=*/16).ok());
  CHECK(fs::exists(sharded.path() + "/model.safetensors.index.json"));
  CHECK_FALSE(fs::exists(sharded.path() + "/model.safetensors"));
  auto store = WeightStore::Open(sharded.path());
  REQUIRE(store.ok());
  CHECK((*store)->Names() == std::vector<std::string>{"a.weight", "b.bias"});
  CHECK((*store)->Find("b.bias")->bytes == b);
  CHECK((*store)->Find("c") == nullptr);
  // One file when it fits.
  TempDir single;
  REQUIRE(WriteWeights(single.path(), tensors).ok());
  CHECK(fs::exists(single.path() + "/model.safetensors"));
  CHECK(WeightStore::Open(single.path()).value()->Find("a.weight")->bytes == a);

  // A tensor whose bytes do not match its shape is refused, naming it.
  auto bad = WriteSafetensors(dir.path() + "/y.safetensors", {{"c", {DType::kF32, {3}, b}}});
  CHECK_THAT(std::string(bad.message()), Catch::Contains("'c'"));
}

TEST_CASE("hostile safetensors files are DATA_LOSS naming the file", "[policy][safetensors]") {
  TempDir dir;
  auto write = [&](const std::string& header, const std::string& data) {
    std::string bytes(8, '\0');
    uint64_t n = header.size();
    std::memcpy(bytes.data(), &n, 8);
    const std::string path = dir.path() + "/t.safetensors";
    REQUIRE(WriteStringToFile(path, bytes + header + data).ok());
    return SafetensorsFile::Open(path);
  };
  auto check = [&](const absl::StatusOr<std::unique_ptr<SafetensorsFile>>& f,
                   const std::string& words) {
    REQUIRE_FALSE(f.ok());
    CHECK(f.status().code() == absl::StatusCode::kDataLoss);
    CHECK_THAT(std::string(f.status().message()), Catch::Contains("t.safetensors") &&
                                                      Catch::Contains(words));
  };
  check(write("{not json", ""), "not a JSON object");
  check(write(R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})", "short"),
        "data_offsets");
  check(write(R"({"w": {"dtype": "Q4", "shape": [1], "data_offsets": [0, 1]}})", "x"), "dtype Q4");
  check(write(R"({"w": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}})", "xxxx"),
        "dimension");
  check(write(R"({"w": {"dtype": "F32", "shape": [1]}})", "xxxx"), "data_offsets");
  // A header length larger than the file.
  std::string huge(8, '\xff');
  REQUIRE(WriteStringToFile(dir.path() + "/t.safetensors", huge + "{}").ok());
  check(SafetensorsFile::Open(dir.path() + "/t.safetensors"), "header length");
  // Too short to hold a header length.
  REQUIRE(WriteStringToFile(dir.path() + "/t.safetensors", "abc").ok());
  CHECK(SafetensorsFile::Open(dir.path() + "/t.safetensors").status().code() ==
        absl::StatusCode::kDataLoss);
  CHECK(SafetensorsFile::Open(dir.path() + "/none.safetensors").status().code() ==
        absl::StatusCode::kNotFound);
  // An index pointing at a shard that is not there.
  REQUIRE(WriteStringToFile(dir.path() + "/model.safetensors.index.json",
                            R"({"weight_map": {"w": "model-00001-of-00002.safetensors"}})")
              .ok());
  auto store = WeightStore::Open(dir.path());
  REQUIRE_FALSE(store.ok());
  CHECK_THAT(std::string(store.status().message()), Catch::Contains("model-00001-of-00002"));
}

}  // namespace
}  // namespace crl::policy
