#include "lib/policy/lora.h"

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/file.h"
#include "common/status.h"
#include "lib/policy/safetensors.h"
#include "lib/policy/tensor_io.h"

namespace crl::policy {

// ---- The adapter of one projection (ProjectionImpl, model.h) ---------------

void ProjectionImpl::AttachLora(int rank, double alpha, double dropout) {
  const int64_t in = weight.size(1), out = weight.size(0);
  auto opts = torch::nn::LinearOptions(in, rank).bias(false);
  lora_a_ = register_module("lora_A", torch::nn::Linear(opts));
  lora_b_ = register_module("lora_B", torch::nn::Linear(torch::nn::LinearOptions(rank, out).bias(false)));
  torch::NoGradGuard no_grad;
  torch::nn::init::kaiming_uniform_(lora_a_->weight, std::sqrt(5.0));
  lora_b_->weight.zero_();
  lora_a_->to(weight.device(), weight.scalar_type());
  lora_b_->to(weight.device(), weight.scalar_type());
  lora_scale = alpha / rank;
  lora_dropout = dropout;
}

void ProjectionImpl::MergeLora() {
  if (!lora_a_) return;
  torch::NoGradGuard no_grad;
  torch::Tensor delta = torch::matmul(lora_b_->weight.to(torch::kFloat32),
                                      lora_a_->weight.to(torch::kFloat32)) * lora_scale;
  weight.add_(delta.to(weight.scalar_type()));
  unregister_module("lora_A");
  unregister_module("lora_B");
  lora_a_ = nullptr;
  lora_b_ = nullptr;
}
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr char kPrefix[] = "base_model.model.";

std::string Suffix(const std::string& name) { return name.substr(name.rfind('.') + 1); }

}  // namespace

absl::Status AttachLora(CausalLm* model, const LoraConfig& config) {
  if (config.rank < 1) return absl::InvalidArgumentError("lora.rank: must be at least 1");
  static const std::set<std::string> kKnown = {"q_proj", "k_proj", "v_proj", "o_proj",
                                               "gate_proj", "up_proj", "down_proj"};
  for (const auto& t : config.targets) {
    if (!kKnown.count(t)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "lora.targets: '", t, "' is not a projection (q_proj k_proj v_proj o_proj gate_proj "
          "up_proj down_proj)"));
    }
  }
  const std::set<std::string> targets(config.targets.begin(), config.targets.end());
  for (auto& [name, proj] : model->Projections()) {
    if (targets.count(Suffix(name))) proj->AttachLora(config.rank, config.alpha, config.dropout);
  }
  return absl::OkStatus();
}

std::vector<std::pair<std::string, torch::Tensor>> LoraParameters(const CausalLm& model) {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& [name, p] : model.NamedParameters()) {
    if (absl::StrContains(name, ".lora_A.") || absl::StrContains(name, ".lora_B.")) {
      out.emplace_back(kPrefix + name, p);
    }
  }
  return out;
}

absl::Status SaveLoraAdapter(const CausalLm& model, const LoraConfig& config,
                             const std::string& dir, const std::string& base_model) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  TensorWriter writer;
  for (const auto& [name, p] : LoraParameters(model)) {
    CRL_RETURN_IF_ERROR(writer.Add(name, p, torch::kFloat32));
  }
  if (writer.empty()) return absl::FailedPreconditionError("the model has no LoRA attached");
  json j = {{"peft_type", "LORA"},
            {"task_type", "CAUSAL_LM"},
            {"base_model_name_or_path", base_model},
            {"r", config.rank},
            {"lora_alpha", config.alpha},
            {"lora_dropout", config.dropout},
            {"target_modules", config.targets},
            {"bias", "none"},
            {"fan_in_fan_out", false},
            {"inference_mode", true},
            {"modules_to_save", nullptr}};
  CRL_RETURN_IF_ERROR(writer.WriteFile((fs::path(dir) / "adapter_model.safetensors").string()));
  return WriteFileAtomically((fs::path(dir) / "adapter_config.json").string(), j.dump(2) + "\n");
}

absl::StatusOr<LoraConfig> LoadLoraAdapter(CausalLm* model, const std::string& dir) {
  const std::string config_path = (fs::path(dir) / "adapter_config.json").string();
  CRL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(config_path, "adapter config"));
  json j = json::parse(text, nullptr, false);
  if (!j.is_object() || j.value("peft_type", "") != "LORA") {
    return absl::InvalidArgumentError(absl::StrCat(config_path, ": not a PEFT LoRA adapter"));
  }
  LoraConfig c;
  try {
    c.rank = j.at("r").get<int>();
    c.alpha = j.value("lora_alpha", static_cast<double>(c.rank));
    c.dropout = j.value("lora_dropout", 0.0);
    c.targets = j.at("target_modules").get<std::vector<std::string>>();
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(config_path, ": ", e.what()));
  }
  CRL_RETURN_IF_ERROR(AttachLora(model, c));
  CRL_ASSIGN_OR_RETURN(auto file, SafetensorsFile::Open(
                                      (fs::path(dir) / "adapter_model.safetensors").string()));
  std::set<std::string> loaded;
  torch::NoGradGuard no_grad;
  for (auto& [name, p] : LoraParameters(*model)) {
    const TensorView* v = file->Find(name);
    if (!v) return absl::InvalidArgumentError(absl::StrCat(dir, ": factor '", name, "' is missing"));
    if (v->dtype != DType::kF32 && v->dtype != DType::kBF16 && v->dtype != DType::kF16) {
      return absl::InvalidArgumentError(absl::StrCat(dir, ": factor '", name, "' is not a float"));
    }
    CRL_ASSIGN_OR_RETURN(torch::Tensor t, ToTorch(*v, name));
    if (t.sizes() != p.sizes()) {
      return absl::InvalidArgumentError(absl::StrCat(dir, ": factor '", name, "' has shape ",
                                                     c10::str(t.sizes()), ", the model needs ",
                                                     c10::str(p.sizes())));
    }
    p.copy_(t.to(p.device(), p.scalar_type()));
    loaded.insert(name);
  }
  for (const auto& [name, view] : file->tensors()) {
    if (!loaded.count(name)) {
      return absl::InvalidArgumentError(
          absl::StrCat(dir, ": factor '", name, "' matches no projection of the model"));
    }
  }
  return c;
}

void MergeLora(CausalLm* model) {
  for (auto& [name, proj] : model->Projections()) proj->MergeLora();
}

ScopedLoraBypass::ScopedLoraBypass(CausalLm* model) : model_(model) {
  for (auto& [name, proj] : model_->Projections()) proj->lora_enabled = false;
}

ScopedLoraBypass::~ScopedLoraBypass() {
  for (auto& [name, proj] : model_->Projections()) proj->lora_enabled = true;
}

}  // namespace crl::policy
