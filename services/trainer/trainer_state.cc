// The trainer's persistence: checkpoints (weights, optimizer moments, every
// rank's RNG, the phase), resuming from one, named snapshots of the weights,
// and publishing a policy version for the sampler. The steps themselves are
// trainer.cc's.
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/file.h"
#include "common/status.h"
#include "lib/policy/loader.h"
#include "lib/policy/safetensors.h"
#include "lib/policy/tensor_io.h"
#include "services/trainer/checkpoint_dirs.h"
#include "services/trainer/torch_call.h"
#include "services/trainer/trainer.h"

namespace crl::trainer {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int kCheckpointFormat = 1;

std::string CheckpointsDir(const std::string& out) { return (fs::path(out) / "checkpoints").string(); }
std::string PolicyDir(const std::string& out) { return (fs::path(out) / "policy").string(); }

absl::Status CheckSnapshotName(const std::string& name) {
  if (name.empty() || name == "." || name == ".." ||
      name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") !=
          std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("snapshot: '", name, "' is not a name of letters, digits, '.', '_' and '-'"));
  }
  return absl::OkStatus();
}

// Copies tensor `name` of `file` into `into`, which must have its shape.
absl::Status LoadTensor(const policy::SafetensorsFile& file, const std::string& name, torch::Tensor& into) {
  const policy::TensorView* v = file.Find(name);
  if (!v) return absl::FailedPreconditionError(absl::StrCat(file.path(), ": no tensor '", name, "'"));
  CRL_ASSIGN_OR_RETURN(torch::Tensor t, policy::ToTorch(*v, name));
  if (t.sizes() != into.sizes()) {
    return absl::FailedPreconditionError(absl::StrCat(file.path(), ": '", name, "' has shape ", c10::str(t.sizes()),
                                                      ", the model's is ", c10::str(into.sizes())));
  }
  into.copy_(t);
  return absl::OkStatus();
}

}  // namespace

absl::Status Trainer::SaveCheckpoint(const json& extra) {
  const std::string parent = CheckpointsDir(options_.out_dir);
  const std::string staging = StagingDirectory(parent, "step-", step_);
  std::error_code ec;
  if (dist_->rank() == 0) {
    fs::remove_all(staging, ec);
    fs::create_directories(staging, ec);
  }
  std::vector<torch::Tensor> barrier = {torch::zeros({1})};
  CRL_RETURN_IF_ERROR(dist_->AllReduceSum(barrier));  // the staging directory exists
  // Every rank: its RNG (dropout masks differ per rank).
  policy::TensorWriter rng;
  CRL_RETURN_IF_ERROR(rng.Add("cpu", DefaultGenerator(torch::kCPU).get_state()));
  if (placement_.device.is_cuda()) {
    CRL_RETURN_IF_ERROR(rng.Add("cuda", DefaultGenerator(placement_.device).get_state()));
  }
  CRL_RETURN_IF_ERROR(rng.WriteFile(
      (fs::path(staging) / absl::StrCat("rng-rank", dist_->rank(), ".safetensors")).string()));
  if (dist_->rank() == 0) {
    policy::TensorWriter optim;
    const auto params = Trainable();
    for (size_t i = 0; i < params.size(); ++i) {
      const std::string& name = params[i].first;
      CRL_RETURN_IF_ERROR(optim.Add(name + ".exp_avg", exp_avg_[i], torch::kFloat32));
      CRL_RETURN_IF_ERROR(optim.Add(name + ".exp_avg_sq", exp_avg_sq_[i], torch::kFloat32));
    }
    CRL_RETURN_IF_ERROR(WriteTrainable((fs::path(staging) / "trainable.safetensors").string()));
    CRL_RETURN_IF_ERROR(optim.WriteFile((fs::path(staging) / "optimizer.safetensors").string()));
    const OptimizerOptions& po = phase_.optimizer;
    json state = {{"format", kCheckpointFormat},
                  {"step", step_},
                  {"phase",
                   {{"id", phase_.id},
                    {"steps", phase_.steps},
                    {"lr", po.lr},
                    {"warmup_steps", po.warmup_steps},
                    {"total_steps", po.total_steps},
                    {"min_lr_ratio", po.min_lr_ratio}}},
                  {"world_size", dist_->world_size()},
                  {"model_dir", options_.model_dir},
                  {"lora", options_.lora},
                  {"extra", extra}};
    CRL_RETURN_IF_ERROR(WriteFileAtomically((fs::path(staging) / "trainer_state.json").string(),
                                            state.dump(2) + "\n"));
  }
  CRL_RETURN_IF_ERROR(dist_->AllReduceSum(barrier));  // every rank's files are written
  if (dist_->rank() == 0) {
    CRL_RETURN_IF_ERROR(CommitDirectory(parent, "step-", step_, options_.keep_checkpoints).status());
  }
  return dist_->AllReduceSum(barrier);
}

absl::StatusOr<json> Trainer::Resume(const std::string& dir) {
  std::string path = dir;
  if (path.empty()) {
    CRL_ASSIGN_OR_RETURN(path, LatestDirectory(CheckpointsDir(options_.out_dir)));
  }
  CRL_ASSIGN_OR_RETURN(std::string text,
                       ReadFileToString((fs::path(path) / "trainer_state.json").string(), "trainer state"));
  json state = json::parse(text, nullptr, false);
  if (!state.is_object() || state.value("format", 0) != kCheckpointFormat) {
    return absl::DataLossError(absl::StrCat(path, "/trainer_state.json: not a crl trainer checkpoint"));
  }
  if (state.value("lora", false) != options_.lora) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, ": the checkpoint was trained ", state.value("lora", false) ? "with" : "without",
        " LoRA; this trainer is configured ", options_.lora ? "with" : "without"));
  }
  if (state.value("world_size", 1) != dist_->world_size()) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, ": written by ", state.value("world_size", 1), " ranks, resumed by ",
        dist_->world_size(), " (the RNG streams would differ)"));
  }
  CRL_ASSIGN_OR_RETURN(auto optim, policy::SafetensorsFile::Open(
                                       (fs::path(path) / "optimizer.safetensors").string()));
  CRL_ASSIGN_OR_RETURN(auto rng, policy::SafetensorsFile::Open(
                                     (fs::path(path) / absl::StrCat("rng-rank", dist_->rank(), ".safetensors")).string()));
  CRL_RETURN_IF_ERROR(LoadTrainable((fs::path(path) / "trainable.safetensors").string()));
  {
    torch::NoGradGuard no_grad;
    const auto params = Trainable();
    for (size_t i = 0; i < params.size(); ++i) {
      CRL_RETURN_IF_ERROR(LoadTensor(*optim, params[i].first + ".exp_avg", exp_avg_[i]));
      CRL_RETURN_IF_ERROR(LoadTensor(*optim, params[i].first + ".exp_avg_sq", exp_avg_sq_[i]));
    }
  }
  for (const auto& [device, key] : {std::pair<torch::Device, const char*>{torch::kCPU, "cpu"},
                                    {placement_.device, "cuda"}}) {
    if (std::string(key) == "cuda" && !placement_.device.is_cuda()) continue;
    const policy::TensorView* v = rng->Find(key);
    if (!v) return absl::DataLossError(absl::StrCat(rng->path(), ": no '", key, "' generator state"));
    CRL_ASSIGN_OR_RETURN(torch::Tensor st, policy::ToTorch(*v, key));
    DefaultGenerator(device).set_state(st);
  }
  step_ = state.value("step", int64_t{0});
  // The phase it was in (a checkpoint from before phases: the trainer's own,
  // every step in it).
  const json phase = state.value("phase", json::object());
  phase_.id = phase.value("id", "");
  phase_.steps = phase.value("steps", step_);
  phase_.optimizer = options_.optimizer;
  if (!phase_.id.empty()) {
    phase_.optimizer.lr = phase.value("lr", phase_.optimizer.lr);
    phase_.optimizer.warmup_steps = phase.value("warmup_steps", phase_.optimizer.warmup_steps);
    phase_.optimizer.total_steps = phase.value("total_steps", phase_.optimizer.total_steps);
    phase_.optimizer.min_lr_ratio = phase.value("min_lr_ratio", phase_.optimizer.min_lr_ratio);
  }
  return state.value("extra", json::object());
}

absl::Status Trainer::WriteTrainable(const std::string& file) const {
  policy::TensorWriter weights;
  for (const auto& [name, p] : Trainable()) CRL_RETURN_IF_ERROR(weights.Add(name, p, torch::kFloat32));
  return weights.WriteFile(file);
}

absl::Status Trainer::LoadTrainable(const std::string& file) {
  CRL_ASSIGN_OR_RETURN(auto weights, policy::SafetensorsFile::Open(file));
  const auto params = Trainable();
  if (weights->tensors().size() != params.size()) {
    return absl::FailedPreconditionError(absl::StrCat(
        file, " holds ", weights->tensors().size(), " trained tensors, this model trains ", params.size(),
        " (a different model or LoRA configuration)"));
  }
  torch::NoGradGuard no_grad;
  for (const auto& [name, p] : params) {
    torch::Tensor into = p;
    CRL_RETURN_IF_ERROR(LoadTensor(*weights, name, into));
  }
  return absl::OkStatus();
}

absl::Status Trainer::SaveSnapshot(const std::string& name) {
  CRL_RETURN_IF_ERROR(CheckSnapshotName(name));
  if (dist_->rank() != 0) return absl::OkStatus();  // every rank holds the same weights
  const fs::path dir = fs::path(options_.out_dir) / "snapshots";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return absl::InternalError(absl::StrCat(dir.string(), ": ", ec.message()));
  // Written beside, then renamed over: a crash leaves the old snapshot or the new.
  const std::string file = (dir / (name + ".safetensors")).string();
  CRL_RETURN_IF_ERROR(WriteTrainable(file + ".tmp"));
  fs::rename(file + ".tmp", file, ec);
  if (ec) return absl::InternalError(absl::StrCat(file, ": ", ec.message()));
  return absl::OkStatus();
}

absl::Status Trainer::CheckPhaseSnapshots(const std::string& save, const std::string& restore) const {
  if (!save.empty()) CRL_RETURN_IF_ERROR(CheckSnapshotName(save));
  if (restore.empty()) return absl::OkStatus();
  CRL_RETURN_IF_ERROR(CheckSnapshotName(restore));
  const std::string file = (fs::path(options_.out_dir) / "snapshots" / (restore + ".safetensors")).string();
  std::error_code ec;
  if (!fs::exists(file, ec)) return absl::NotFoundError(absl::StrCat("snapshot '", restore, "': ", file, " does not exist"));
  return absl::OkStatus();
}

absl::Status Trainer::RestoreSnapshot(const std::string& name) {
  if (name.empty()) return absl::InvalidArgumentError("snapshot: a name is required");
  CRL_RETURN_IF_ERROR(CheckPhaseSnapshots("", name));
  const std::string file = (fs::path(options_.out_dir) / "snapshots" / (name + ".safetensors")).string();
  CRL_RETURN_IF_ERROR(LoadTrainable(file));
  ++step_;
  return absl::OkStatus();
}

absl::StatusOr<PublishedPolicy> Trainer::Publish() {
  PublishedPolicy out;
  out.version = step_;
  out.adapter = options_.lora;
  out.base_model = options_.model_dir;
  const std::string parent = PolicyDir(options_.out_dir);
  out.path = (fs::path(parent) / absl::StrCat("v", step_)).string();
  if (dist_->rank() != 0) return out;
  const std::string staging = StagingDirectory(parent, "v", step_);
  std::error_code ec;
  fs::remove_all(staging, ec);
  fs::create_directories(staging, ec);
  if (options_.lora) {
    CRL_RETURN_IF_ERROR(policy::SaveLoraAdapter(*model_, options_.lora_config, staging, options_.model_dir));
  } else {
    CRL_RETURN_IF_ERROR(model_->Save(staging));
    for (const char* name : {"tokenizer.json", "tokenizer_config.json", "generation_config.json"}) {
      const fs::path from = fs::path(options_.model_dir) / name;
      if (fs::exists(from, ec)) fs::copy_file(from, fs::path(staging) / name, ec);
    }
  }
  CRL_ASSIGN_OR_RETURN(out.path, CommitDirectory(parent, "v", step_, options_.keep_published));
  return out;
}
}  // namespace crl::trainer
