// The LibTorch policy against an independent Python reference written from the
// model equations (tests/policy/reference_model.py, Debian's python3-torch),
// on small random weights of every supported family; KV cache, padding, LoRA,
// weights errors and generation checked within crl.
#include "tests/support/torch_catch.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/file.h"
#include "lib/policy/generate.h"
#include "lib/policy/loader.h"
#include "lib/policy/logprobs.h"
#include "lib/policy/lora.h"
#include "lib/policy/model.h"
#include "lib/policy/safetensors.h"
#include "tests/support/policy_test_util.h"

namespace crl::policy {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

ModelConfig Tiny(Family family) { return TinyConfig(family, 97, 64); }

// The model's logits, in float64 lists, for ids (+ mask).
json Logits(CausalLm& m, const std::vector<std::vector<int64_t>>& ids,
            const std::vector<std::vector<int64_t>>& mask) {
  const int64_t B = ids.size(), T = ids[0].size();
  torch::Tensor t = torch::zeros({B, T}, torch::kLong), mk = torch::ones({B, T}, torch::kLong);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t i = 0; i < T; ++i) {
      t[b][i] = ids[b][i];
      if (!mask.empty()) mk[b][i] = mask[b][i];
    }
  }
  torch::NoGradGuard no_grad;
  torch::Tensor logits = m.Forward(t, mask.empty() ? torch::Tensor() : mk).to(torch::kFloat64);
  json out = json::array();
  for (int64_t b = 0; b < B; ++b) {
    json rows = json::array();
    for (int64_t i = 0; i < T; ++i) {
      std::vector<double> v(logits[b][i].data_ptr<double>(),
                            logits[b][i].data_ptr<double>() + logits.size(2));
      rows.push_back(v);
    }
    out.push_back(rows);
  }
  return out;
}

// Largest |a - b| over real (unmasked) positions.
double MaxDiff(const json& a, const json& b, const std::vector<std::vector<int64_t>>& mask) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    for (size_t t = 0; t < a[i].size(); ++t) {
      if (!mask.empty() && mask[i][t] == 0) continue;
      for (size_t v = 0; v < a[i][t].size(); ++v) {
        worst = std::max(worst, std::fabs(a[i][t][v].get<double>() - b[i][t][v].get<double>()));
      }
    }
  }
  return worst;
}

TEST_CASE("every family matches the independent reference to 1e-5 (fp32)", "[policy][reference]") {
  const std::vector<std::vector<int64_t>> ids = {{5, 17, 3, 90, 44, 1, 60, 2}, {0, 0, 7, 8, 9, 10, 11, 12}};
  const std::vector<std::vector<int64_t>> mask = {{1, 1, 1, 1, 1, 1, 1, 1}, {0, 0, 1, 1, 1, 1, 1, 1}};
  struct Case {
    const char* name;
    ModelConfig config;
  };
  std::vector<Case> cases = {{"llama", Tiny(Family::kLlama)}, {"qwen2", Tiny(Family::kQwen2)},
                             {"qwen3", Tiny(Family::kQwen3)}, {"mistral", Tiny(Family::kMistral)}};
  ModelConfig tied = Tiny(Family::kQwen2);
  tied.tie_word_embeddings = true;
  cases.push_back({"qwen2 tied", tied});
  ModelConfig llama31 = Tiny(Family::kLlama);
  llama31.rope_scaling = {"llama3", 8.0, 1.0, 4.0, 16};
  llama31.rope_theta = 500000;
  cases.push_back({"llama3 rope scaling", llama31});
  ModelConfig linear = Tiny(Family::kLlama);
  linear.rope_scaling.type = "linear";
  linear.rope_scaling.factor = 2.0;
  cases.push_back({"linear rope scaling", linear});
  for (auto& c : cases) {
    INFO(c.name);
    TempDir dir;
    auto model = CausalLm::Init(c.config, 7, torch::kCPU, torch::kFloat32);
    REQUIRE(model.ok());
    REQUIRE((*model)->Save(dir.path()).ok());
    // Through the files: what the reference reads is what crl loads.
    auto loaded = CausalLm::Load(dir.path(), torch::kCPU, torch::kFloat32);
    REQUIRE(loaded.ok());
    json ours = Logits(**loaded, ids, mask);
    auto ref = RunReference(dir.path(), {{"ids", ids}, {"mask", mask}});
    REQUIRE(ref.ok());
    const double diff = MaxDiff(ours, (*ref)["logits"], mask);
    INFO("max |ours - reference| = " << diff);
    CHECK(diff < 1e-5);
    // Padding does not change a sequence's logits.
    json alone = Logits(**loaded, {{7, 8, 9, 10, 11, 12}}, {});
    for (int t = 0; t < 6; ++t) {
      for (int v = 0; v < 97; ++v) {
        CHECK(alone[0][t][v].get<double>() ==
              Approx(ours[1][t + 2][v].get<double>()).margin(1e-5));
      }
    }
  }
}

TEST_CASE("decoding with the KV cache gives the full forward's logits", "[policy]") {
  for (Family f : {Family::kQwen3, Family::kMistral}) {
    auto model = CausalLm::Init(Tiny(f), 3, torch::kCPU, torch::kFloat32);
    REQUIRE(model.ok());
    torch::NoGradGuard no_grad;
    torch::Tensor ids = torch::tensor({{4, 8, 15, 16, 23, 42, 7}}, torch::kLong);
    torch::Tensor full = (*model)->Forward(ids);
    for (int64_t capacity : {int64_t{0}, int64_t{16}}) {
      KvCache cache;
      cache.capacity = capacity;
      torch::Tensor first = (*model)->Forward(ids.narrow(1, 0, 4), {}, &cache);
      CHECK(torch::allclose(first, full.narrow(1, 0, 4), 1e-5, 1e-5));
      for (int64_t t = 4; t < 7; ++t) {
        torch::Tensor step = (*model)->Forward(ids.narrow(1, t, 1), {}, &cache);
        CHECK(torch::allclose(step, full.narrow(1, t, 1), 1e-5, 1e-5));
      }
      CHECK(cache.length == 7);
    }
  }
}

TEST_CASE("LoRA: the reference agrees, merging changes nothing, PEFT files round trip", "[policy][reference]") {
  TempDir dir;
  ModelConfig c = Tiny(Family::kQwen2);
  auto model = CausalLm::Init(c, 11, torch::kCPU, torch::kFloat32);
  REQUIRE(model.ok());
  REQUIRE((*model)->Save(dir.path()).ok());
  LoraConfig lora;
  lora.rank = 4;
  lora.alpha = 8;
  lora.targets = {"q_proj", "v_proj", "down_proj"};
  REQUIRE(AttachLora(model->get(), lora).ok());
  {
    torch::NoGradGuard no_grad;  // B starts at zero: give it values so LoRA matters
    for (auto& [name, p] : LoraParameters(**model)) p.normal_(0, 0.05);
  }
  CHECK(LoraParameters(**model).size() == 2 * 3 * 2);  // A and B, 3 targets, 2 layers
  CHECK(LoraParameters(**model)[0].first.rfind("base_model.model.model.layers.0.", 0) == 0);
  const std::string adapter = dir.path() + "/adapter";
  REQUIRE(SaveLoraAdapter(**model, lora, adapter, "tiny").ok());
  const std::vector<std::vector<int64_t>> ids = {{1, 2, 3, 4, 5, 6}};
  json with_lora = Logits(**model, ids, {});
  auto ref = RunReference(dir.path(), {{"ids", ids}, {"lora", adapter}});
  REQUIRE(ref.ok());
  CHECK(MaxDiff(with_lora, (*ref)["logits"], {}) < 1e-5);
  json base = Logits(*CausalLm::Load(dir.path(), torch::kCPU, torch::kFloat32).value(), ids, {});
  CHECK(MaxDiff(with_lora, base, {}) > 1e-3);  // the adapter does something

  // A fresh base model with the adapter loaded from disk gives the same.
  auto reloaded = CausalLm::Load(dir.path(), torch::kCPU, torch::kFloat32);
  REQUIRE(reloaded.ok());
  auto read = LoadLoraAdapter(reloaded->get(), adapter);
  REQUIRE(read.ok());
  CHECK(read->rank == 4);
  CHECK(MaxDiff(Logits(**reloaded, ids, {}), with_lora, {}) < 1e-6);
  // Merged into the weights: same function, no factors left.
  MergeLora(reloaded->get());
  CHECK(LoraParameters(**reloaded).empty());
  CHECK(MaxDiff(Logits(**reloaded, ids, {}), with_lora, {}) < 1e-5);

  LoraConfig bad = lora;
  bad.targets = {"qkv_proj"};
  CHECK_THAT(std::string(AttachLora(reloaded->get(), bad).message()), Catch::Contains("'qkv_proj'"));
}

TEST_CASE("PolicyLoader: LoRA versions share the kept base and equal fresh loads", "[policy]") {
  TempDir dir;
  const std::string base_dir = dir.path() + "/base";
  auto model = CausalLm::Init(Tiny(Family::kQwen2), 3, torch::kCPU, torch::kFloat32);
  REQUIRE(model.ok());
  REQUIRE((*model)->Save(base_dir).ok());
  LoraConfig lora;
  lora.rank = 4;
  lora.targets = {"q_proj", "down_proj"};
  REQUIRE(AttachLora(model->get(), lora).ok());
  for (const std::string name : {"a1", "a2"}) {  // two versions' adapters
    torch::NoGradGuard no_grad;
    for (auto& [n, p] : LoraParameters(**model)) p.normal_(0, 0.05);
    REQUIRE(SaveLoraAdapter(**model, lora, dir.path() + "/" + name, "tiny").ok());
  }
  const std::vector<std::vector<int64_t>> ids = {{1, 2, 3, 4, 5}};
  auto fresh = [&](const std::string& adapter) {
    auto m = LoadPolicy(base_dir, adapter, Placement{});
    REQUIRE(m.ok());
    return Logits(**m, ids, {});
  };
  auto weight = [](const CausalLm& m) {
    for (const auto& [name, p] : m.NamedParameters()) {
      if (name == "model.layers.0.self_attn.q_proj.weight") return p;
    }
    return torch::Tensor();
  };

  PolicyLoader loader(Placement{});
  auto v1 = loader.Load(base_dir, dir.path() + "/a1");
  auto v2 = loader.Load(base_dir, dir.path() + "/a2");
  REQUIRE(v1.ok());
  REQUIRE(v2.ok());
  CHECK(loader.base_loads() == 1);  // the second version read only its adapter
  CHECK(weight(**v1).data_ptr() == weight(**v2).data_ptr());
  CHECK(LoraParameters(**v2).size() == 2 * 2 * 2);
  // Each version computes what a fresh load of it does, the first one still
  // after the second was attached beside it.
  CHECK(MaxDiff(Logits(**v2, ids, {}), fresh(dir.path() + "/a2"), {}) < 1e-6);
  CHECK(MaxDiff(Logits(**v1, ids, {}), fresh(dir.path() + "/a1"), {}) < 1e-6);
  CHECK(MaxDiff(Logits(**v1, ids, {}), Logits(**v2, ids, {}), {}) > 1e-3);
  // The kept base itself carries no adapter.
  auto base = loader.Load(base_dir, "");
  REQUIRE(base.ok());
  CHECK(LoraParameters(**base).empty());
  CHECK(MaxDiff(Logits(**base, ids, {}), fresh(""), {}) < 1e-6);
  CHECK(loader.base_loads() == 1);

  // Another base directory is read, and becomes the kept one.
  const std::string other = dir.path() + "/other";
  REQUIRE(CausalLm::Init(Tiny(Family::kQwen2), 4, torch::kCPU, torch::kFloat32).value()->Save(other).ok());
  auto v3 = loader.Load(other, dir.path() + "/a1");
  REQUIRE(v3.ok());
  CHECK(loader.base_loads() == 2);
  CHECK(weight(**v3).data_ptr() != weight(**v1).data_ptr());
  // A broken adapter is an error naming it, and the kept base is unharmed.
  auto broken = loader.Load(other, dir.path() + "/missing");
  REQUIRE_FALSE(broken.ok());
  CHECK_THAT(std::string(broken.status().message()), Catch::Contains("missing"));
  CHECK(LoraParameters(**loader.Load(other, "")).empty());
}

TEST_CASE("weights that do not fit the config are refused, naming the tensor", "[policy]") {
  TempDir dir;
  auto model = CausalLm::Init(Tiny(Family::kLlama), 1, torch::kCPU, torch::kFloat32);
  REQUIRE(model.ok());
  REQUIRE((*model)->Save(dir.path()).ok());
  // The same weights under a config with q/k/v biases: the biases are missing.
  ModelConfig biased = Tiny(Family::kLlama);
  biased.attention_bias = true;
  REQUIRE(WriteStringToFile(dir.path() + "/config.json", ModelConfigJson(biased)).ok());
  auto missing = CausalLm::Load(dir.path(), torch::kCPU, torch::kFloat32);
  REQUIRE_FALSE(missing.ok());
  CHECK_THAT(std::string(missing.status().message()),
             Catch::Contains("'model.layers.0.self_attn.q_proj.bias' is missing"));
  // And untied weights under a tied config: lm_head is fine (ignored), but
  // a stray tensor is not.
  REQUIRE(WriteStringToFile(dir.path() + "/config.json", ModelConfigJson(Tiny(Family::kLlama))).ok());
  auto file = SafetensorsFile::Open(dir.path() + "/model.safetensors");
  REQUIRE(file.ok());
  std::vector<NamedTensor> tensors;
  for (const auto& [name, view] : (*file)->tensors()) tensors.push_back({name, view});
  float extra[2] = {1, 2};
  tensors.push_back({"model.layers.0.mystery.weight",
                     {DType::kF32, {2}, std::string_view(reinterpret_cast<char*>(extra), 8)}});
  REQUIRE(WriteSafetensors(dir.path() + "/other.safetensors", tensors).ok());
  fs::rename(dir.path() + "/other.safetensors", dir.path() + "/model.safetensors");
  auto stray = CausalLm::Load(dir.path(), torch::kCPU, torch::kFloat32);
  REQUIRE_FALSE(stray.ok());
  CHECK_THAT(std::string(stray.status().message()), Catch::Contains("'model.layers.0.mystery.weight'"));
}

TEST_CASE("generation: greedy is fixed, seeds reproduce, logprobs are the model's", "[policy]") {
  auto model = CausalLm::Init(Tiny(Family::kQwen3), 5, torch::kCPU, torch::kFloat32);
  REQUIRE(model.ok());
  SamplingParams greedy;
  greedy.temperature = 0;
  greedy.max_new_tokens = 6;
  auto a = Generate(**model, {{1, 2, 3}, {9, 8, 7, 6, 5}}, greedy);
  auto b = Generate(**model, {{1, 2, 3}}, greedy);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK((*a)[0].tokens == (*b)[0].tokens);  // batch-mate and padding change nothing
  CHECK((*a)[0].finish_reason == "length");

  SamplingParams sample;
  sample.temperature = 1.0;
  sample.top_p = 0.9;
  sample.top_k = 20;
  sample.max_new_tokens = 8;
  sample.seed = 42;
  auto s1 = Generate(**model, {{4, 5, 6}}, sample);
  auto s2 = Generate(**model, {{4, 5, 6}}, sample);
  REQUIRE(s1.ok());
  CHECK((*s1)[0].tokens == (*s2)[0].tokens);
  sample.seed = 43;
  auto s3 = Generate(**model, {{4, 5, 6}}, sample);
  CHECK((*s1)[0].tokens != (*s3)[0].tokens);

  // The recorded logprobs equal a full forward's over prompt + completion.
  std::vector<int64_t> seq = {4, 5, 6};
  for (int t : (*s1)[0].tokens) seq.push_back(t);
  torch::NoGradGuard no_grad;
  torch::Tensor ids = torch::tensor(seq, torch::kLong).unsqueeze(0);
  torch::Tensor lp = TokenLogprobs((*model)->Forward(ids), ids);
  for (size_t i = 0; i < (*s1)[0].logprobs.size(); ++i) {
    CHECK((*s1)[0].logprobs[i] == Approx(lp[0][2 + i].item<float>()).margin(1e-4));
  }

  sample.stop_ids = {(*s1)[0].tokens[1]};
  sample.seed = 42;
  auto stopped = Generate(**model, {{4, 5, 6}}, sample);
  CHECK((*stopped)[0].tokens.size() <= 2);
  CHECK((*stopped)[0].tokens.back() == sample.stop_ids[0]);
  CHECK((*stopped)[0].finish_reason == "stop");
  CHECK(Generate(**model, {{4, 500}}, sample).status().code() == absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace crl::policy
