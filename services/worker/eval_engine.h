// The worker's logic, free of gRPC: resolve a task, compile on the CPU tier
// (bounded by compile slots), verify or measure on an exclusive lane. Used by
// the gRPC service (eval_service.h) and in-process by `crl eval`.
#ifndef CRL_SERVICES_WORKER_EVAL_ENGINE_H_
#define CRL_SERVICES_WORKER_EVAL_ENGINE_H_

#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "crl/v1/eval.pb.h"
#include "services/worker/compiler.h"
#include "services/worker/lanes.h"
#include "services/worker/runner_client.h"
#include "services/worker/task.h"
#include "services/worker/verifier.h"
#include "services/worker/worker_metrics.h"

namespace crl {

struct EngineOptions {
  // Concurrent compiles (the CPU tier). <= 0: the number of cores.
  int compile_slots = 0;
  // Task paths in requests resolve against this directory and may not leave
  // it. Empty: any path (the in-process CLI).
  std::string task_root;
  // Where inline task bundles are unpacked.
  std::string work_dir = "/tmp/crl-work";
  // How long a request waits for a free lane.
  absl::Duration lane_wait = absl::Minutes(5);
  VerifyConfig verify;
  RunnerOptions runner;
  // Measure defaults.
  int measure_iterations = 50;
  int measure_warmup = 5;
  double measure_call_timeout_seconds = 20;
};

// Thread-safe: requests run concurrently, limited by compile slots and lanes.
class EvalEngine {
 public:
  // `compiler`, `lanes` and `metrics` (may be null) must outlive the engine.
  EvalEngine(EngineOptions options, CompilerInterface* compiler, LanePool* lanes,
             WorkerMetrics* metrics, SeedSource seeds = SecureSeedSource());

  // Non-OK statuses are request errors (INVALID_ARGUMENT naming the field,
  // NOT_FOUND, FAILED_PRECONDITION for a broken task) or overload
  // (UNAVAILABLE / DEADLINE_EXCEEDED). Evaluation outcomes, INFRA_ERROR
  // included, are verdicts in the response.
  absl::StatusOr<v1::CompileResponse> Compile(const v1::CompileRequest& request);
  absl::StatusOr<v1::EvaluateResponse> Evaluate(const v1::EvaluateRequest& request);
  absl::StatusOr<v1::MeasureResponse> Measure(const v1::MeasureRequest& request);
  absl::StatusOr<v1::MeasurePairResponse> MeasurePair(const v1::MeasurePairRequest& request);
  v1::WorkerInfo Info() const;

  // Loads (and caches) the task a request names.
  absl::StatusOr<std::shared_ptr<const NativeTask>> ResolveTask(const v1::Task& task);
  // The backend a request runs on: explicit, else the worker's default.
  absl::StatusOr<BackendKind> ResolveBackend(v1::Backend requested, const NativeTask& task) const;

 private:
  absl::StatusOr<CompileOutcome> CompileSource(BackendKind backend, const std::string& source,
                                               const std::string& filename,
                                               const v1::CompileLimits& limits);
  absl::StatusOr<std::string> ReferenceLibrary(const NativeTask& task, BackendKind backend);
  void AcquireCompileSlot();
  void ReleaseCompileSlot();

  const EngineOptions options_;
  CompilerInterface* compiler_;
  LanePool* lanes_;
  WorkerMetrics* metrics_;
  SeedSource seeds_;
  int compile_slots_;

  absl::Mutex mu_;
  int compiles_running_ ABSL_GUARDED_BY(mu_) = 0;
  // Path -> task, reloaded when task.yaml changes (mtime).
  struct CachedTask {
    std::shared_ptr<const NativeTask> task;
    int64_t mtime_ns = 0;
  };
  std::map<std::string, CachedTask> tasks_ ABSL_GUARDED_BY(mu_);
};

}  // namespace crl

#endif  // CRL_SERVICES_WORKER_EVAL_ENGINE_H_
