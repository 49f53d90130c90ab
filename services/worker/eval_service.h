// crl-worker's gRPC edge: validates, hands the work to EvalEngine on the
// bounded executor, finishes the call. No logic lives here.
#ifndef CRL_SERVICES_WORKER_EVAL_SERVICE_H_
#define CRL_SERVICES_WORKER_EVAL_SERVICE_H_

#include "common/server.h"
#include "crl/v1/eval.grpc.pb.h"
#include "services/worker/eval_engine.h"

namespace crl {

// Thread-safe; holds no per-call state.
class EvalServiceImpl final : public v1::EvalService::CallbackService {
 public:
  EvalServiceImpl(EvalEngine* engine, CallEnv env, WorkerMetrics* metrics)
      : engine_(engine), env_(env), metrics_(metrics) {}

  grpc::ServerUnaryReactor* Compile(grpc::CallbackServerContext* context,
                                    const v1::CompileRequest* request,
                                    v1::CompileResponse* response) override;
  grpc::ServerUnaryReactor* Evaluate(grpc::CallbackServerContext* context,
                                     const v1::EvaluateRequest* request,
                                     v1::EvaluateResponse* response) override;
  grpc::ServerUnaryReactor* Measure(grpc::CallbackServerContext* context,
                                    const v1::MeasureRequest* request,
                                    v1::MeasureResponse* response) override;
  grpc::ServerUnaryReactor* MeasurePair(grpc::CallbackServerContext* context,
                                        const v1::MeasurePairRequest* request,
                                        v1::MeasurePairResponse* response) override;
  grpc::ServerUnaryReactor* GetWorkerInfo(grpc::CallbackServerContext* context,
                                          const v1::GetWorkerInfoRequest* request,
                                          v1::WorkerInfo* response) override;

 private:
  void UpdateQueueDepth();

  EvalEngine* engine_;
  CallEnv env_;
  WorkerMetrics* metrics_;
};

}  // namespace crl

#endif  // CRL_SERVICES_WORKER_EVAL_SERVICE_H_
