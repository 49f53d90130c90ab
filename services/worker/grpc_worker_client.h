// Worker client over gRPC: the implementation of worker_client.h's interface
// that the binaries and the CLI connect with. Code that only uses a client
// includes worker_client.h, which is free of gRPC.
#ifndef CRL_SERVICES_WORKER_GRPC_WORKER_CLIENT_H_
#define CRL_SERVICES_WORKER_GRPC_WORKER_CLIENT_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/client.h"
#include "common/context.h"
#include "crl/v1/eval.grpc.pb.h"
#include "services/worker/worker_client.h"

namespace crl {

// A crl-worker over gRPC: every call carries a deadline (the request's, at
// most the client's timeout) and the token; cancelling the request cancels
// the call.
class GrpcWorkerClient final : public WorkerClientInterface {
 public:
  static absl::StatusOr<std::unique_ptr<GrpcWorkerClient>> Create(const std::string& target,
                                                                  const ClientOptions& options);
  absl::StatusOr<v1::CompileResponse> Compile(const v1::CompileRequest& request,
                                              const RequestContext& context) override;
  absl::StatusOr<v1::EvaluateResponse> Evaluate(const v1::EvaluateRequest& request,
                                                const RequestContext& context) override;
  absl::StatusOr<v1::MeasureResponse> Measure(const v1::MeasureRequest& request,
                                              const RequestContext& context) override;
  absl::StatusOr<v1::MeasurePairResponse> MeasurePair(const v1::MeasurePairRequest& request,
                                                      const RequestContext& context) override;
  absl::StatusOr<v1::WorkerInfo> GetWorkerInfo(const RequestContext& context) override;

 private:
  explicit GrpcWorkerClient(RpcClient client)
      : client_(std::move(client)), stub_(v1::EvalService::NewStub(client_.channel())) {}
  RpcClient client_;
  std::unique_ptr<v1::EvalService::Stub> stub_;
};

}  // namespace crl

#endif  // CRL_SERVICES_WORKER_GRPC_WORKER_CLIENT_H_
