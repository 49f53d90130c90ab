#include "services/trainer/trainer_service.h"

#include <deque>
#include <memory>

#include "absl/synchronization/mutex.h"
#include "common/grpc_status.h"

namespace crl {
namespace {

// One WatchPolicyVersions call: the current version first, then each one
// the loop publishes, one write in flight at a time. Ends when the client
// cancels (or the server shuts down and cancels it).
class VersionStream : public grpc::ServerWriteReactor<v1::PolicyVersion> {
 public:
  VersionStream(trainer::TrainingLoop* loop, const Authenticator* auth,
                grpc::CallbackServerContext* context)
      : loop_(loop) {
    if (auth) {
      grpc::Status s = auth->Check(*context);
      if (!s.ok()) {
        absl::MutexLock lock(&mu_);
        finished_ = true;
        Finish(s);
        return;
      }
    }
    // Subscribe before reading the current version: nothing falls between.
    watch_id_ = loop_->Watch([this](const v1::PolicyVersion& v) { Push(v); }, [this] { Close(); });
    watching_ = true;
    Push(loop_->Current());
  }

  void OnWriteDone(bool ok) override {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    if (!ok) finish_pending_ = true;
    if (finish_pending_) {
      FinishOnceLocked();
    } else if (!pending_.empty()) {
      WriteNextLocked();
    } else if (close_) {
      FinishOnceLocked();
    }
  }

  // A write in flight completes (ok = false) after a cancel; finish then.
  void OnCancel() override {
    absl::MutexLock lock(&mu_);
    finish_pending_ = true;
    if (!writing_) FinishOnceLocked();
  }

  // The trainer drains: end the stream after what is queued.
  void Close() {
    absl::MutexLock lock(&mu_);
    close_ = true;
    if (!writing_ && pending_.empty()) FinishOnceLocked();
  }

  void OnDone() override {
    if (watching_) loop_->Unwatch(watch_id_);  // no Push runs after this returns
    delete this;
  }

 private:
  void Push(const v1::PolicyVersion& v) {
    absl::MutexLock lock(&mu_);
    if (finished_ || finish_pending_) return;
    pending_.push_back(v);
    if (!writing_) WriteNextLocked();
  }

  void WriteNextLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    current_ = std::move(pending_.front());
    pending_.pop_front();
    writing_ = true;
    StartWrite(&current_);
  }

  void FinishOnceLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (finished_) return;
    finished_ = true;
    Finish(close_ && !finish_pending_ ? grpc::Status::OK : grpc::Status::CANCELLED);
  }

  trainer::TrainingLoop* loop_;
  int watch_id_ = 0;
  bool watching_ = false;
  absl::Mutex mu_;
  std::deque<v1::PolicyVersion> pending_ ABSL_GUARDED_BY(mu_);
  v1::PolicyVersion current_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool finish_pending_ ABSL_GUARDED_BY(mu_) = false;
  bool close_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace

grpc::ServerUnaryReactor* TrainerServiceImpl::SubmitGroup(grpc::CallbackServerContext* context,
                                                          const v1::SubmitGroupRequest* request,
                                                          v1::SubmitGroupResponse* response) {
  return ServeUnary(context, env_, [this, request, response](const RequestContext& ctx) {
    auto r = loop_->SubmitGroup(*request, ctx);
    if (!r.ok() && r.status().code() == absl::StatusCode::kInvalidArgument && metrics_) {
      metrics_->rejected.Increment();
    }
    return FillResponse(std::move(r), response);
  });
}

grpc::ServerUnaryReactor* TrainerServiceImpl::SubmitExamples(
    grpc::CallbackServerContext* context, const v1::SubmitExamplesRequest* request,
    v1::SubmitExamplesResponse* response) {
  return ServeUnary(context, env_, [this, request, response](const RequestContext& ctx) {
    auto r = loop_->SubmitExamples(*request, ctx);
    if (!r.ok() && r.status().code() == absl::StatusCode::kInvalidArgument && metrics_) {
      metrics_->rejected.Increment();
    }
    return FillResponse(std::move(r), response);
  });
}

grpc::ServerUnaryReactor* TrainerServiceImpl::GetPolicyVersion(
    grpc::CallbackServerContext* context, const v1::GetPolicyVersionRequest*,
    v1::PolicyVersion* response) {
  CallEnv inline_env{env_.auth, nullptr};
  return ServeUnary(context, inline_env, [this, response](const RequestContext&) {
    *response = loop_->Current();
    return grpc::Status::OK;
  });
}

grpc::ServerUnaryReactor* TrainerServiceImpl::Checkpoint(grpc::CallbackServerContext* context,
                                                         const v1::CheckpointRequest*,
                                                         v1::CheckpointResponse* response) {
  return ServeUnary(context, env_, [this, response](const RequestContext& ctx) {
    return FillResponse(loop_->Checkpoint(ctx), response);
  });
}

grpc::ServerUnaryReactor* TrainerServiceImpl::Flush(grpc::CallbackServerContext* context,
                                                    const v1::FlushRequest*,
                                                    v1::FlushResponse* response) {
  return ServeUnary(context, env_, [this, response](const RequestContext& ctx) {
    return FillResponse(loop_->Flush(ctx), response);
  });
}

grpc::ServerUnaryReactor* TrainerServiceImpl::BeginPhase(grpc::CallbackServerContext* context,
                                                         const v1::BeginPhaseRequest* request,
                                                         v1::PolicyVersion* response) {
  return ServeUnary(context, env_, [this, request, response](const RequestContext& ctx) {
    return FillResponse(loop_->BeginPhase(*request, ctx), response);
  });
}

grpc::ServerWriteReactor<v1::PolicyVersion>* TrainerServiceImpl::WatchPolicyVersions(
    grpc::CallbackServerContext* context, const v1::WatchPolicyVersionsRequest*) {
  return new VersionStream(loop_, env_.auth, context);
}

}  // namespace crl
