#include "services/timing/eval_client.h"

#include "common/status.h"

namespace crl::timing {

absl::StatusOr<std::unique_ptr<GrpcEvalClient>> GrpcEvalClient::Create(
    const std::string& target, const ClientOptions& options) {
  CRL_ASSIGN_OR_RETURN(RpcClient client, RpcClient::Create(target, options));
  return std::unique_ptr<GrpcEvalClient>(new GrpcEvalClient(std::move(client)));
}

absl::StatusOr<v1::EvaluateResponse> GrpcEvalClient::Evaluate(const v1::EvaluateRequest& r) {
  grpc::ClientContext ctx;
  client_.Prepare(&ctx);
  v1::EvaluateResponse out;
  grpc::Status s = stub_->Evaluate(&ctx, r, &out);
  if (!s.ok()) return FromGrpcStatus(s);
  return out;
}

absl::StatusOr<v1::MeasureResponse> GrpcEvalClient::Measure(const v1::MeasureRequest& r) {
  grpc::ClientContext ctx;
  client_.Prepare(&ctx);
  v1::MeasureResponse out;
  grpc::Status s = stub_->Measure(&ctx, r, &out);
  if (!s.ok()) return FromGrpcStatus(s);
  return out;
}

absl::StatusOr<v1::MeasurePairResponse> GrpcEvalClient::MeasurePair(
    const v1::MeasurePairRequest& r) {
  grpc::ClientContext ctx;
  client_.Prepare(&ctx);
  v1::MeasurePairResponse out;
  grpc::Status s = stub_->MeasurePair(&ctx, r, &out);
  if (!s.ok()) return FromGrpcStatus(s);
  return out;
}

}  // namespace crl::timing
