// The in-process worker of worker_client.h: a WorkerRuntime behind the
// client interface.
#include "common/status.h"
#include "services/worker/worker_client.h"
#include "services/worker/worker_setup.h"

namespace crl {
namespace {

class LocalWorkerClient final : public WorkerClientInterface {
 public:
  explicit LocalWorkerClient(std::unique_ptr<WorkerRuntime> runtime)
      : runtime_(std::move(runtime)), engine_(runtime_->engine.get()) {}

  absl::StatusOr<v1::CompileResponse> Compile(const v1::CompileRequest& request,
                                              const RequestContext& context) override {
    return engine_->Compile(request, context);
  }
  absl::StatusOr<v1::EvaluateResponse> Evaluate(const v1::EvaluateRequest& request,
                                                const RequestContext& context) override {
    return engine_->Evaluate(request, context);
  }
  absl::StatusOr<v1::MeasureResponse> Measure(const v1::MeasureRequest& request,
                                              const RequestContext& context) override {
    return engine_->Measure(request, context);
  }
  absl::StatusOr<v1::MeasurePairResponse> MeasurePair(const v1::MeasurePairRequest& request,
                                                      const RequestContext& context) override {
    return engine_->MeasurePair(request, context);
  }
  absl::StatusOr<v1::WorkerInfo> GetWorkerInfo(const RequestContext&) override {
    return engine_->Info();
  }

 private:
  std::unique_ptr<WorkerRuntime> runtime_;
  EvalEngine* engine_;
};

}  // namespace

LocalWorkerOptions::LocalWorkerOptions() : options_(std::make_unique<WorkerOptions>()) {}
LocalWorkerOptions::LocalWorkerOptions(const WorkerOptions& options)
    : options_(std::make_unique<WorkerOptions>(options)) {}
LocalWorkerOptions::~LocalWorkerOptions() = default;
LocalWorkerOptions::LocalWorkerOptions(const LocalWorkerOptions& other)
    : options_(std::make_unique<WorkerOptions>(*other.options_)) {}
LocalWorkerOptions& LocalWorkerOptions::operator=(const LocalWorkerOptions& other) {
  *options_ = *other.options_;
  return *this;
}

void LocalWorkerOptions::Bind(OptionSet* flags) { BindWorkerOptions(flags, options_.get()); }
void LocalWorkerOptions::set_gpus(const std::string& gpus) { options_->gpus = gpus; }
const std::string& LocalWorkerOptions::gpus() const { return options_->gpus; }
double LocalWorkerOptions::kb_atol() const { return options_->kb.atol; }
double LocalWorkerOptions::kb_rtol() const { return options_->kb.rtol; }

absl::StatusOr<std::unique_ptr<WorkerClientInterface>> StartLocalWorker(
    const LocalWorkerOptions& options) {
  CRL_ASSIGN_OR_RETURN(std::unique_ptr<WorkerRuntime> runtime,
                       BuildWorker(options.options(), nullptr));
  return std::unique_ptr<WorkerClientInterface>(new LocalWorkerClient(std::move(runtime)));
}

}  // namespace crl
