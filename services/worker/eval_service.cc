#include "services/worker/eval_service.h"

#include "common/metrics.h"
#include "common/grpc_status.h"

namespace crl {

void EvalServiceImpl::UpdateQueueDepth() {
  if (metrics_ && env_.executor) metrics_->queue_depth.Set(env_.executor->QueueDepth());
}

grpc::ServerUnaryReactor* EvalServiceImpl::Compile(grpc::CallbackServerContext* context,
                                                   const v1::CompileRequest* request,
                                                   v1::CompileResponse* response) {
  auto* r = ServeUnary(context, env_, [this, request, response](const RequestContext& call) {
    UpdateQueueDepth();
    return FillResponse(engine_->Compile(*request, call), response);
  });
  UpdateQueueDepth();
  return r;
}

grpc::ServerUnaryReactor* EvalServiceImpl::Evaluate(grpc::CallbackServerContext* context,
                                                    const v1::EvaluateRequest* request,
                                                    v1::EvaluateResponse* response) {
  auto* r = ServeUnary(context, env_, [this, request, response](const RequestContext& call) {
    UpdateQueueDepth();
    return FillResponse(engine_->Evaluate(*request, call), response);
  });
  UpdateQueueDepth();
  return r;
}

grpc::ServerUnaryReactor* EvalServiceImpl::Measure(grpc::CallbackServerContext* context,
                                                   const v1::MeasureRequest* request,
                                                   v1::MeasureResponse* response) {
  auto* r = ServeUnary(context, env_, [this, request, response](const RequestContext& call) {
    UpdateQueueDepth();
    return FillResponse(engine_->Measure(*request, call), response);
  });
  UpdateQueueDepth();
  return r;
}

grpc::ServerUnaryReactor* EvalServiceImpl::MeasurePair(grpc::CallbackServerContext* context,
                                                       const v1::MeasurePairRequest* request,
                                                       v1::MeasurePairResponse* response) {
  auto* r = ServeUnary(context, env_, [this, request, response](const RequestContext& call) {
    UpdateQueueDepth();
    return FillResponse(engine_->MeasurePair(*request, call), response);
  });
  UpdateQueueDepth();
  return r;
}

grpc::ServerUnaryReactor* EvalServiceImpl::GetWorkerInfo(grpc::CallbackServerContext* context,
                                                         const v1::GetWorkerInfoRequest*,
                                                         v1::WorkerInfo* response) {
  CallEnv inline_env{env_.auth, nullptr};  // cheap: answer on the reactor
  return ServeUnary(context, inline_env, [this, response](const RequestContext&) {
    *response = engine_->Info();
    response->set_version(CrlVersion());
    return grpc::Status::OK;
  });
}

}  // namespace crl
