#include "services/worker/grpc_worker_client.h"

#include "common/status.h"

namespace crl {

absl::StatusOr<std::unique_ptr<GrpcWorkerClient>> GrpcWorkerClient::Create(
    const std::string& target, const ClientOptions& options) {
  CRL_ASSIGN_OR_RETURN(RpcClient client, RpcClient::Create(target, options));
  return std::unique_ptr<GrpcWorkerClient>(new GrpcWorkerClient(std::move(client)));
}

absl::StatusOr<v1::CompileResponse> GrpcWorkerClient::Compile(const v1::CompileRequest& request,
                                                              const RequestContext& context) {
  return client_.Call<v1::CompileResponse>(context, request, [this](auto... args) {
    stub_->async()->Compile(args...);
  });
}

absl::StatusOr<v1::EvaluateResponse> GrpcWorkerClient::Evaluate(
    const v1::EvaluateRequest& request, const RequestContext& context) {
  return client_.Call<v1::EvaluateResponse>(context, request, [this](auto... args) {
    stub_->async()->Evaluate(args...);
  });
}

absl::StatusOr<v1::MeasureResponse> GrpcWorkerClient::Measure(const v1::MeasureRequest& request,
                                                              const RequestContext& context) {
  return client_.Call<v1::MeasureResponse>(context, request, [this](auto... args) {
    stub_->async()->Measure(args...);
  });
}

absl::StatusOr<v1::MeasurePairResponse> GrpcWorkerClient::MeasurePair(
    const v1::MeasurePairRequest& request, const RequestContext& context) {
  return client_.Call<v1::MeasurePairResponse>(context, request, [this](auto... args) {
    stub_->async()->MeasurePair(args...);
  });
}

absl::StatusOr<v1::WorkerInfo> GrpcWorkerClient::GetWorkerInfo(const RequestContext& context) {
  return client_.Call<v1::WorkerInfo>(context, v1::GetWorkerInfoRequest(), [this](auto... args) {
    stub_->async()->GetWorkerInfo(args...);
  });
}

}  // namespace crl
