// The one way other services and the CLI reach a crl-worker (EvalService): an
// interface (free of gRPC: code that only uses a client compiles without it),
// its gRPC implementation in grpc_worker_client.h, and an in-process worker for
// machines that run everything in one process. The fake for tests is
// fake_worker_client.h. Nothing else of services/worker/ is for outside use.
//
//   auto worker = crl::GrpcWorkerClient::Create("10.0.0.5:50051", client_options);
//   auto verdict = (*worker)->Evaluate(request, RequestContext::Background());
#ifndef CRL_SERVICES_WORKER_WORKER_CLIENT_H_
#define CRL_SERVICES_WORKER_WORKER_CLIENT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/context.h"
#include "common/options.h"
#include "crl/v1/eval.pb.h"

namespace crl {

// Pairs a MeasurePair takes at most when its request leaves max_pairs at 0
// (eval.proto): the worker's pair loop and the timing oracle, which scales
// it for a noisy re-measurement, read it here.
inline constexpr int kDefaultMaxPairs = 400;

// Implementations are thread-safe. Statuses follow eval.proto: a non-OK
// status is a request error, overload, cancellation or an unreachable
// worker; every outcome of an evaluation is a verdict in the response.
class WorkerClientInterface {
 public:
  virtual ~WorkerClientInterface() = default;
  virtual absl::StatusOr<v1::CompileResponse> Compile(const v1::CompileRequest& request,
                                                      const RequestContext& context) = 0;
  virtual absl::StatusOr<v1::EvaluateResponse> Evaluate(const v1::EvaluateRequest& request,
                                                        const RequestContext& context) = 0;
  virtual absl::StatusOr<v1::MeasureResponse> Measure(const v1::MeasureRequest& request,
                                                      const RequestContext& context) = 0;
  virtual absl::StatusOr<v1::MeasurePairResponse> MeasurePair(
      const v1::MeasurePairRequest& request, const RequestContext& context) = 0;
  virtual absl::StatusOr<v1::WorkerInfo> GetWorkerInfo(const RequestContext& context) = 0;
};

struct WorkerOptions;

// The options of an in-process worker: everything crl-worker takes, opaque
// here so that clients do not depend on the worker's internals.
class LocalWorkerOptions {
 public:
  LocalWorkerOptions();
  explicit LocalWorkerOptions(const WorkerOptions& options);
  ~LocalWorkerOptions();
  LocalWorkerOptions(const LocalWorkerOptions& other);
  LocalWorkerOptions& operator=(const LocalWorkerOptions& other);

  // Binds the worker's flags (--host_lanes, --gpus, --cache_dir, ...).
  void Bind(OptionSet* flags);
  // GPUs to serve: "auto", "" (none) or a list like "0,1".
  void set_gpus(const std::string& gpus);
  const std::string& gpus() const;
  // The float32 tolerance KernelBench tasks are judged with.
  double kb_atol() const;
  double kb_rtol() const;
  const WorkerOptions& options() const { return *options_; }

 private:
  std::unique_ptr<WorkerOptions> options_;
};

// Starts a worker inside this process (sandboxed compiles and runners as
// crl-worker has them, no server). Defined in crl_worker_lib, which links
// the whole worker.
absl::StatusOr<std::unique_ptr<WorkerClientInterface>> StartLocalWorker(
    const LocalWorkerOptions& options);

}  // namespace crl

#endif  // CRL_SERVICES_WORKER_WORKER_CLIENT_H_
