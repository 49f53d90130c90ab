#include "services/trainer/local_trainer.h"

#include <atomic>

#include "absl/synchronization/notification.h"
#include "common/status.h"

namespace crl {
namespace {

class LocalTrainerClient final : public TrainerClientInterface {
 public:
  explicit LocalTrainerClient(std::unique_ptr<trainer::TrainerParts> parts) : parts_(std::move(parts)) {}
  ~LocalTrainerClient() override { parts_->loop->Drain(); }

  absl::StatusOr<v1::SubmitGroupResponse> SubmitGroup(const v1::SubmitGroupRequest& request,
                                                      const RequestContext& context) override {
    return parts_->loop->SubmitGroup(request, context);
  }
  absl::StatusOr<v1::SubmitExamplesResponse> SubmitExamples(const v1::SubmitExamplesRequest& request,
                                                            const RequestContext& context) override {
    return parts_->loop->SubmitExamples(request, context);
  }
  absl::StatusOr<v1::PolicyVersion> GetPolicyVersion(const RequestContext&) override {
    return parts_->loop->Current();
  }
  absl::StatusOr<v1::CheckpointResponse> Checkpoint(const RequestContext& context) override {
    return parts_->loop->Checkpoint(context);
  }
  absl::StatusOr<v1::FlushResponse> Flush(const RequestContext& context) override {
    return parts_->loop->Flush(context);
  }
  absl::StatusOr<v1::PolicyVersion> BeginPhase(const v1::BeginPhaseRequest& request,
                                               const RequestContext& context) override {
    return parts_->loop->BeginPhase(request, context);
  }
  absl::Status WatchPolicyVersions(
      const RequestContext& context,
      const std::function<void(const v1::PolicyVersion&)>& on_version) override {
    CRL_RETURN_IF_ERROR(context.Check());
    absl::Notification closed;
    const int id = parts_->loop->Watch(on_version, [&closed] { closed.Notify(); });
    on_version(parts_->loop->Current());
    while (!closed.WaitForNotificationWithTimeout(absl::Milliseconds(100))) {
      if (absl::Status s = context.Check(); !s.ok()) {
        parts_->loop->Unwatch(id);
        return s;
      }
    }
    parts_->loop->Unwatch(id);
    return absl::OkStatus();
  }

 private:
  std::unique_ptr<trainer::TrainerParts> parts_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<TrainerClientInterface>> StartLocalTrainer(
    const trainer::TrainerServiceOptions& options) {
  if (options.dist.world_size != 1) {
    return absl::InvalidArgumentError("world_size: an in-process trainer is a world of one");
  }
  CRL_ASSIGN_OR_RETURN(auto parts, trainer::BuildTrainerParts(options, RealClock::Get()));
  CRL_RETURN_IF_ERROR(parts->StartLoop(options.loop, nullptr, RealClock::Get()));
  return std::unique_ptr<TrainerClientInterface>(new LocalTrainerClient(std::move(parts)));
}

}  // namespace crl
