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

absl::Status StepRunner::Stop() { return Send({{"op", "stop"}}); }

absl::Status StepRunner::Follow() {
  for (;;) {
    std::string bytes;
    CRL_RETURN_IF_ERROR(dist_->Broadcast(&bytes));
    json op = json::parse(bytes, nullptr, false);
    if (!op.is_object()) return absl::DataLossError("follower: rank 0 sent malformed operation");
    const std::string name = op.value("op", "");
    if (name == "stop") return absl::OkStatus();
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
    } else {
      return absl::DataLossError(absl::StrCat("follower: unknown operation '", name, "'"));
    }
  }
}

}  // namespace crl::trainer
