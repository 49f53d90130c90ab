// Runs the trainer's operations on every data-parallel rank in the same
// order. Rank 0 decides (it serves gRPC, or reads the offline data): each
// operation is broadcast to the other ranks, which execute it in Follow(),
// so all of them train on the same global batch and checkpoint and publish
// together. In a single process the broadcast is nothing.
#ifndef CRL_SERVICES_TRAINER_STEP_RUNNER_H_
#define CRL_SERVICES_TRAINER_STEP_RUNNER_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "services/trainer/trainer.h"

namespace crl::trainer {

// A phase change (TrainerService.BeginPhase), applied in this order: save
// a snapshot of the weights, restore one, begin the phase.
struct PhaseChange {
  std::string id;
  OptimizerOptions optimizer;
  std::string save_snapshot;
  std::string restore_snapshot;
};

// Not thread-safe: one thread drives it (rank 0's training thread).
class StepRunner {
 public:
  // `trainer` and `dist` (may be null: one process) must outlive it.
  StepRunner(Trainer* trainer, DistributedInterface* dist);

  // Rank 0.
  absl::StatusOr<StepStats> Train(const std::vector<TrainSequence>& batch, Objective objective);
  absl::Status Checkpoint(const nlohmann::json& extra);
  absl::StatusOr<PublishedPolicy> Publish();
  absl::Status BeginPhase(const PhaseChange& change);
  // Ends the other ranks' Follow().
  absl::Status Stop();

  // Ranks > 0: executes rank 0's operations until Stop (OK) or a failure.
  absl::Status Follow();

  Trainer* trainer() { return trainer_; }

 private:
  absl::Status Send(const nlohmann::json& op);

  Trainer* trainer_;
  SingleProcess single_;
  DistributedInterface* dist_;
};

// Sequences as JSON and back (exact: floats survive the round trip).
nlohmann::json SequencesToJson(const std::vector<TrainSequence>& batch);
std::vector<TrainSequence> SequencesFromJson(const nlohmann::json& j);

}  // namespace crl::trainer

#endif  // CRL_SERVICES_TRAINER_STEP_RUNNER_H_
