// The one way other services and the CLI reach crl-trainer (TrainerService): an
// interface (free of gRPC: code that only uses a client compiles without it),
// its gRPC implementation in grpc_trainer_client.h, and an in-process trainer
// for single-process use (StartLocalTrainer, in crl_trainer_lib: it needs
// LibTorch). The fake for tests is fake_trainer_client.h.
#ifndef CRL_SERVICES_TRAINER_TRAINER_CLIENT_H_
#define CRL_SERVICES_TRAINER_TRAINER_CLIENT_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/context.h"
#include "crl/v1/trainer.pb.h"

namespace crl {

// Implementations are thread-safe.
class TrainerClientInterface {
 public:
  virtual ~TrainerClientInterface() = default;
  virtual absl::StatusOr<v1::SubmitGroupResponse> SubmitGroup(const v1::SubmitGroupRequest& request,
                                                              const RequestContext& context) = 0;
  virtual absl::StatusOr<v1::SubmitExamplesResponse> SubmitExamples(
      const v1::SubmitExamplesRequest& request, const RequestContext& context) = 0;
  virtual absl::StatusOr<v1::PolicyVersion> GetPolicyVersion(const RequestContext& context) = 0;
  virtual absl::StatusOr<v1::CheckpointResponse> Checkpoint(const RequestContext& context) = 0;
  virtual absl::StatusOr<v1::FlushResponse> Flush(const RequestContext& context) = 0;
  // A new training phase (trainer.proto's BeginPhase).
  virtual absl::StatusOr<v1::PolicyVersion> BeginPhase(const v1::BeginPhaseRequest& request,
                                                       const RequestContext& context) = 0;
  // Calls `on_version` with the current version and each one published
  // after it, until `context` ends (then CANCELLED / DEADLINE_EXCEEDED), the
  // trainer drains (OK) or the connection breaks (UNAVAILABLE).
  virtual absl::Status WatchPolicyVersions(
      const RequestContext& context, const std::function<void(const v1::PolicyVersion&)>& on_version) = 0;
};

}  // namespace crl

#endif  // CRL_SERVICES_TRAINER_TRAINER_CLIENT_H_
