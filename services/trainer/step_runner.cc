#include "services/trainer/step_runner.h"

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace crl::trainer {

using nlohmann::json;

json SequencesToJson(const std::vector<TrainSequence>& batch) {
  json out = json::array();
  for (const auto& s : batch) {
    out.push_back({{"id", s.id},
                   {"prompt", s.prompt},
                   {"completion", s.completion},
                   {"old_logprobs", s.old_logprobs},
                   {"advantage", s.advantage},
                   {"policy_version", s.policy_version},
                   {"reward", s.reward}});
  }
  return out;
}

std::vector<TrainSequence> SequencesFromJson(const json& j) {
  std::vector<TrainSequence> out;
  for (const auto& e : j) {
    TrainSequence s;
    s.id = e.at("id").get<std::string>();
    s.prompt = e.at("prompt").get<std::vector<int>>();
    s.completion = e.at("completion").get<std::vector<int>>();
    s.old_logprobs = e.at("old_logprobs").get<std::vector<float>>();
    s.advantage = e.at("advantage").get<double>();
    s.policy_version = e.at("policy_version").get<int64_t>();
    s.reward = e.at("reward").get<double>();
    out.push_back(std::move(s));
  }
  return out;
}

namespace {

json PhaseToJson(const PhaseChange& c) {
  return {{"id", c.id},
          {"lr", c.optimizer.lr},
          {"warmup_steps", c.optimizer.warmup_steps},
          {"total_steps", c.optimizer.total_steps},
          {"min_lr_ratio", c.optimizer.min_lr_ratio},
          {"save_snapshot", c.save_snapshot},
          {"restore_snapshot", c.restore_snapshot}};
}

// The trainer's options with the phase's schedule (betas, decay, clip stay).
PhaseChange PhaseFromJson(const json& j, const OptimizerOptions& base) {
  PhaseChange c;
  c.id = j.value("id", "");
  c.optimizer = base;
  c.optimizer.lr = j.value("lr", base.lr);
  c.optimizer.warmup_steps = j.value("warmup_steps", base.warmup_steps);
  c.optimizer.total_steps = j.value("total_steps", base.total_steps);
  c.optimizer.min_lr_ratio = j.value("min_lr_ratio", base.min_lr_ratio);
  c.save_snapshot = j.value("save_snapshot", "");
  c.restore_snapshot = j.value("restore_snapshot", "");
  return c;
}

absl::Status Apply(Trainer* trainer, const PhaseChange& c) {
  if (!c.save_snapshot.empty()) CRL_RETURN_IF_ERROR(trainer->SaveSnapshot(c.save_snapshot));
  if (!c.restore_snapshot.empty()) CRL_RETURN_IF_ERROR(trainer->RestoreSnapshot(c.restore_snapshot));
  trainer->BeginPhase(c.id, c.optimizer);
  return absl::OkStatus();
}

}  // namespace

StepRunner::StepRunner(Trainer* trainer, DistributedInterface* dist)
    : trainer_(trainer), dist_(dist ? dist : &single_) {}

absl::Status StepRunner::Send(const json& op) {
  if (dist_->world_size() == 1) return absl::OkStatus();
  std::string bytes = op.dump();
  return dist_->Broadcast(&bytes);
}

absl::StatusOr<StepStats> StepRunner::Train(const std::vector<TrainSequence>& batch,
                                            Objective objective) {
  CRL_RETURN_IF_ERROR(Send({{"op", "train"},
                            {"objective", ObjectiveName(objective)},
                            {"batch", SequencesToJson(batch)}}));
  return trainer_->Train(batch, objective);
}

absl::Status StepRunner::Checkpoint(const json& extra) {
  CRL_RETURN_IF_ERROR(Send({{"op", "checkpoint"}, {"extra", extra}}));
  return trainer_->SaveCheckpoint(extra);
}

absl::StatusOr<PublishedPolicy> StepRunner::Publish() {
  CRL_RETURN_IF_ERROR(Send({{"op", "publish"}}));
  return trainer_->Publish();
}

absl::Status StepRunner::BeginPhase(const PhaseChange& change) {
  // Refused here, before the other ranks are told: they cannot refuse alone.
  CRL_RETURN_IF_ERROR(trainer_->CheckPhaseSnapshots(change.save_snapshot, change.restore_snapshot));
  CRL_RETURN_IF_ERROR(Send({{"op", "phase"}, {"phase", PhaseToJson(change)}}));
  return Apply(trainer_, change);
}

absl::Status StepRunner::Stop() {
  absl::Status s = Send({{"op", "stop"}});
  dist_->Leave();
  return s;
}

absl::Status StepRunner::Follow() {
  for (;;) {
    std::string bytes;
    CRL_RETURN_IF_ERROR(dist_->Broadcast(&bytes));
    json op = json::parse(bytes, nullptr, false);
    if (!op.is_object()) return absl::DataLossError("follower: rank 0 sent malformed operation");
    const std::string name = op.value("op", "");
    if (name == "stop") {
      dist_->Leave();
      return absl::OkStatus();
    }
    if (name == "train") {
      const Objective objective = op.value("objective", "") == "supervised"
                                      ? Objective::kSupervised
                                      : Objective::kPolicyGradient;
      auto stats = trainer_->Train(SequencesFromJson(op.at("batch")), objective);
      if (!stats.ok()) return stats.status();
    } else if (name == "checkpoint") {
      CRL_RETURN_IF_ERROR(trainer_->SaveCheckpoint(op.value("extra", json::object())));
    } else if (name == "publish") {
      CRL_RETURN_IF_ERROR(trainer_->Publish().status());
    } else if (name == "phase") {
      CRL_RETURN_IF_ERROR(Apply(trainer_, PhaseFromJson(op.value("phase", json::object()),
                                                        trainer_->options().optimizer)));
    } else {
      return absl::DataLossError(absl::StrCat("follower: unknown operation '", name, "'"));
    }
  }
}

}  // namespace crl::trainer
