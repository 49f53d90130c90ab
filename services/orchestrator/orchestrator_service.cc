#include "services/orchestrator/orchestrator_service.h"

#include <deque>
#include <filesystem>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/grpc_status.h"
#include "lib/run/run_spec.h"
#include "lib/run/task_files.h"

namespace crl {
namespace {

// One WatchRun call: a pump thread reads the run's events from the store
// (waiting for new ones) and writes them one at a time.
class WatchStream : public grpc::ServerWriteReactor<v1::RunEvent> {
 public:
  WatchStream(orchestrator::Orchestrator* o, const Authenticator* auth, grpc::CallbackServerContext* context,
              const v1::WatchRunRequest& request)
      : orchestrator_(o), request_(request) {
    if (auth) {
      grpc::Status s = auth->Check(*context);
      if (!s.ok()) {
        Finish(s);
        return;
      }
    }
    absl::StatusOr<v1::Run> run = orchestrator_->Get(request_.run_id());
    if (!run.ok()) {
      Finish(ToGrpcStatus(run.status()));
      return;
    }
    pump_ = std::thread([this] { Pump(); });
  }

  void OnWriteDone(bool ok) override {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    if (!ok) cancelled_ = true;
  }
  void OnCancel() override {
    absl::MutexLock lock(&mu_);
    cancelled_ = true;
  }
  void OnDone() override {
    if (pump_.joinable()) pump_.join();
    delete this;
  }

 private:
  void Pump() {
    int64_t seq = request_.after_sequence();
    for (;;) {
      if (Cancelled()) return Finish(grpc::Status(grpc::StatusCode::CANCELLED, "watch cancelled"));
      auto events = orchestrator_->Events(request_.run_id(), seq, absl::Milliseconds(500));
      if (!events.ok()) return Finish(ToGrpcStatus(events.status()));
      for (const auto& e : *events) {
        {
          absl::MutexLock lock(&mu_);
          if (cancelled_) break;
          writing_ = true;
          event_ = e;
        }
        StartWrite(&event_);
        absl::MutexLock lock(&mu_);
        mu_.Await(absl::Condition(
            +[](WatchStream* w) ABSL_EXCLUSIVE_LOCKS_REQUIRED(w->mu_) { return !w->writing_; }, this));
        seq = e.sequence();
      }
      if (events->empty()) {
        absl::StatusOr<v1::Run> run = orchestrator_->Get(request_.run_id());
        if (!run.ok()) return Finish(ToGrpcStatus(run.status()));
        // Ended, and every event up to the end was written.
        if (run::RunEnded(run->state())) {
          auto more = orchestrator_->Events(request_.run_id(), seq, absl::ZeroDuration());
          if (more.ok() && more->empty()) return Finish(grpc::Status::OK);
        }
      }
    }
  }
  bool Cancelled() {
    absl::MutexLock lock(&mu_);
    return cancelled_;
  }

  orchestrator::Orchestrator* orchestrator_;
  const v1::WatchRunRequest request_;
  std::thread pump_;
  absl::Mutex mu_;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  v1::RunEvent event_;  // the write in flight
};

}  // namespace

grpc::ServerUnaryReactor* OrchestratorServiceImpl::SubmitRun(grpc::CallbackServerContext* context,
                                                             const v1::SubmitRunRequest* request, v1::Run* response) {
  return ServeUnary(context, env_, [this, request, response](const RequestContext&) {
    return FillResponse(orchestrator_->Submit(*request), response);
  });
}

grpc::ServerUnaryReactor* OrchestratorServiceImpl::GetRun(grpc::CallbackServerContext* context,
                                                          const v1::GetRunRequest* request, v1::Run* response) {
  return ServeUnary(context, env_, [this, request, response](const RequestContext&) {
    return FillResponse(orchestrator_->Get(request->run_id()), response);
  });
}

grpc::ServerUnaryReactor* OrchestratorServiceImpl::ListRuns(grpc::CallbackServerContext* context,
                                                            const v1::ListRunsRequest* request,
                                                            v1::ListRunsResponse* response) {
  return ServeUnary(context, env_, [this, request, response](const RequestContext&) {
    return FillResponse(orchestrator_->List(*request), response);
  });
}

grpc::ServerWriteReactor<v1::RunEvent>* OrchestratorServiceImpl::WatchRun(grpc::CallbackServerContext* context,
                                                                          const v1::WatchRunRequest* request) {
  return new WatchStream(orchestrator_, env_.auth, context, *request);
}

grpc::ServerUnaryReactor* OrchestratorServiceImpl::CancelRun(grpc::CallbackServerContext* context,
                                                             const v1::CancelRunRequest* request, v1::Run* response) {
  return ServeUnary(context, env_, [this, request, response](const RequestContext&) {
    return FillResponse(orchestrator_->Cancel(request->run_id()), response);
  });
}

grpc::ServerUnaryReactor* OrchestratorServiceImpl::GetBestVariants(grpc::CallbackServerContext* context,
                                                                   const v1::GetBestVariantsRequest* request,
                                                                   v1::GetBestVariantsResponse* response) {
  return ServeUnary(context, env_, [this, request, response](const RequestContext&) {
    auto best = orchestrator_->Best(request->run_id(), request->limit());
    if (!best.ok()) return ToGrpcStatus(best.status());
    for (auto& v : *best) *response->add_variants() = std::move(v);
    return grpc::Status::OK;
  });
}

grpc::ServerUnaryReactor* OrchestratorServiceImpl::ExportRun(grpc::CallbackServerContext* context,
                                                             const v1::ExportRunRequest* request,
                                                             v1::ExportRunResponse* response) {
  return ServeUnary(context, env_, [this, request, response](const RequestContext&) {
    return FillResponse(orchestrator_->Export(*request), response);
  });
}

grpc::ServerUnaryReactor* OrchestratorServiceImpl::ScoreCompletions(grpc::CallbackServerContext* context,
                                                                    const v1::ScoreCompletionsRequest* request,
                                                                    v1::ScoreCompletionsResponse* response) {
  return ServeUnary(context, env_, [this, request, response](const RequestContext& ctx) {
    return FillResponse(orchestrator_->Score(*request, ctx), response);
  });
}

grpc::ServerUnaryReactor* OrchestratorServiceImpl::ListHackCases(grpc::CallbackServerContext* context,
                                                                 const v1::ListHackCasesRequest* request,
                                                                 v1::ListHackCasesResponse* response) {
  return ServeUnary(context, env_, [this, request, response](const RequestContext&) {
    return FillResponse(orchestrator_->HackCases(*request), response);
  });
}

grpc::ServerUnaryReactor* OrchestratorServiceImpl::GetHackCase(grpc::CallbackServerContext* context,
                                                               const v1::GetHackCaseRequest* request,
                                                               v1::HackCase* response) {
  return ServeUnary(context, env_, [this, request, response](const RequestContext&) {
    return FillResponse(orchestrator_->HackCase(request->case_id()), response);
  });
}

grpc::ServerUnaryReactor* OrchestratorServiceImpl::RejudgeRun(grpc::CallbackServerContext* context,
                                                              const v1::RejudgeRunRequest* request,
                                                              v1::RejudgeRunResponse* response) {
  return ServeUnary(context, env_, [this, request, response](const RequestContext& ctx) {
    return FillResponse(orchestrator_->Rejudge(request->run_id(), ctx), response);
  });
}

grpc::ServerUnaryReactor* OrchestratorServiceImpl::ParseRunSpec(grpc::CallbackServerContext* context,
                                                                const v1::ParseRunSpecRequest* request,
                                                                v1::RunSpec* response) {
  return ServeUnary(context, env_, [request, response](const RequestContext&) {
    std::error_code ec;
    const std::filesystem::path scratch = std::filesystem::temp_directory_path(ec);
    if (ec) return ToGrpcStatus(absl::InternalError(absl::StrCat("ParseRunSpec: no temporary directory: ", ec.message())));
    return FillResponse(run::ParseSentSpec(*request, scratch.string()), response);
  });
}

}  // namespace crl
