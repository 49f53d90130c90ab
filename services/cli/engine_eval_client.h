// The timing oracle's view of an in-process worker (crl eval without --worker).
#ifndef CRL_SERVICES_CLI_ENGINE_EVAL_CLIENT_H_
#define CRL_SERVICES_CLI_ENGINE_EVAL_CLIENT_H_

#include "services/timing/eval_client.h"
#include "services/worker/eval_engine.h"

namespace crl::cli {

class EngineEvalClient final : public timing::EvalClientInterface {
 public:
  explicit EngineEvalClient(EvalEngine* engine) : engine_(engine) {}
  absl::StatusOr<v1::EvaluateResponse> Evaluate(const v1::EvaluateRequest& r) override {
    return engine_->Evaluate(r);
  }
  absl::StatusOr<v1::MeasureResponse> Measure(const v1::MeasureRequest& r) override {
    return engine_->Measure(r);
  }
  absl::StatusOr<v1::MeasurePairResponse> MeasurePair(const v1::MeasurePairRequest& r) override {
    return engine_->MeasurePair(r);
  }

 private:
  EvalEngine* engine_;
};

}  // namespace crl::cli

#endif  // CRL_SERVICES_CLI_ENGINE_EVAL_CLIENT_H_
