// crl-trainer's gRPC edge: TrainerService over the TrainingLoop. Submissions
// and flushes may wait for a training step, so they run on the request
// executor; WatchPolicyVersions is a server stream fed by the loop.
#ifndef CRL_SERVICES_TRAINER_TRAINER_SERVICE_H_
#define CRL_SERVICES_TRAINER_TRAINER_SERVICE_H_

#include "common/server.h"
#include "crl/v1/trainer.grpc.pb.h"
#include "services/trainer/trainer_metrics.h"
#include "services/trainer/training_loop.h"

namespace crl {

// Thread-safe; holds no per-call state beyond the open streams.
class TrainerServiceImpl final : public v1::TrainerService::CallbackService {
 public:
  // `loop` and `metrics` (may be null) must outlive the service.
  TrainerServiceImpl(trainer::TrainingLoop* loop, trainer::TrainerMetrics* metrics, CallEnv env)
      : loop_(loop), metrics_(metrics), env_(env) {}

  grpc::ServerUnaryReactor* SubmitGroup(grpc::CallbackServerContext* context,
                                        const v1::SubmitGroupRequest* request,
                                        v1::SubmitGroupResponse* response) override;
  grpc::ServerUnaryReactor* SubmitExamples(grpc::CallbackServerContext* context,
                                           const v1::SubmitExamplesRequest* request,
                                           v1::SubmitExamplesResponse* response) override;
  grpc::ServerUnaryReactor* GetPolicyVersion(grpc::CallbackServerContext* context,
                                             const v1::GetPolicyVersionRequest* request,
                                             v1::PolicyVersion* response) override;
  grpc::ServerUnaryReactor* Checkpoint(grpc::CallbackServerContext* context,
                                       const v1::CheckpointRequest* request,
                                       v1::CheckpointResponse* response) override;
  grpc::ServerUnaryReactor* Flush(grpc::CallbackServerContext* context,
                                  const v1::FlushRequest* request,
                                  v1::FlushResponse* response) override;
  grpc::ServerUnaryReactor* BeginPhase(grpc::CallbackServerContext* context, const v1::BeginPhaseRequest* request,
                                       v1::PolicyVersion* response) override;
  grpc::ServerWriteReactor<v1::PolicyVersion>* WatchPolicyVersions(
      grpc::CallbackServerContext* context, const v1::WatchPolicyVersionsRequest* request) override;

 private:
  trainer::TrainingLoop* loop_;
  trainer::TrainerMetrics* metrics_;
  CallEnv env_;
};

}  // namespace crl

#endif  // CRL_SERVICES_TRAINER_TRAINER_SERVICE_H_
