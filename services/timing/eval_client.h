// What the timing oracle needs from a worker, behind an interface so the
// oracle runs against a remote crl-worker (gRPC), an in-process engine (the
// CLI), or a fake (tests).
#ifndef CRL_SERVICES_TIMING_EVAL_CLIENT_H_
#define CRL_SERVICES_TIMING_EVAL_CLIENT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/client.h"
#include "crl/v1/eval.grpc.pb.h"

namespace crl::timing {

// Implementations must be thread-safe.
class EvalClientInterface {
 public:
  virtual ~EvalClientInterface() = default;
  virtual absl::StatusOr<v1::EvaluateResponse> Evaluate(const v1::EvaluateRequest& request) = 0;
  virtual absl::StatusOr<v1::MeasureResponse> Measure(const v1::MeasureRequest& request) = 0;
  virtual absl::StatusOr<v1::MeasurePairResponse> MeasurePair(
      const v1::MeasurePairRequest& request) = 0;
};

// A crl-worker over gRPC; every call carries a deadline and the token.
class GrpcEvalClient final : public EvalClientInterface {
 public:
  static absl::StatusOr<std::unique_ptr<GrpcEvalClient>> Create(const std::string& target,
                                                                const ClientOptions& options);
  absl::StatusOr<v1::EvaluateResponse> Evaluate(const v1::EvaluateRequest& request) override;
  absl::StatusOr<v1::MeasureResponse> Measure(const v1::MeasureRequest& request) override;
  absl::StatusOr<v1::MeasurePairResponse> MeasurePair(
      const v1::MeasurePairRequest& request) override;

 private:
  GrpcEvalClient(RpcClient client)
      : client_(std::move(client)), stub_(v1::EvalService::NewStub(client_.channel())) {}
  RpcClient client_;
  std::unique_ptr<v1::EvalService::Stub> stub_;
};

}  // namespace crl::timing

#endif  // CRL_SERVICES_TIMING_EVAL_CLIENT_H_
