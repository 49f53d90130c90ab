// The worker's logic, free of gRPC: resolve a task, compile on the CPU tier
// (bounded by compile slots), verify or measure on an exclusive lane. Used by
// the gRPC service (eval_service.h) and in-process by `crl eval`.
#ifndef CRL_SERVICES_WORKER_EVAL_ENGINE_H_
#define CRL_SERVICES_WORKER_EVAL_ENGINE_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "crl/v1/eval.pb.h"
#include "services/worker/compiler.h"
#include "services/worker/kb_session.h"
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
  // KernelBench-format tasks (the Python harness).
  KbOptions kb;
  // Measure defaults.
  int measure_iterations = 50;
  int measure_warmup = 5;
  double measure_call_timeout_seconds = 20;
};

// `path` resolved against `task_root`, which it may not leave (empty root:
// any path). INVALID_ARGUMENT names the field.
absl::StatusOr<std::string> ResolveTaskPath(const std::string& task_root, const std::string& path);

// The adaptive interleaved timing loop of MeasurePair, shared by the native
// and KernelBench paths: warm-up, blocks of pairs in a random side order,
// output checks every `check_every` pairs, stop at the CI target or budget.
struct PairLoop {
  PairLoop(const v1::MeasurePairRequest& request, uint64_t seed);
  // One timed call of one side on inputs from `seed`; `check` asks it to keep
  // outputs for CheckFn. False when the call failed (the caller has already
  // finished the response).
  using TimedFn = std::function<bool(bool is_ref, uint64_t seed, bool check,
                                     v1::TimingSample* sample, double* outside_seconds)>;
  // After both sides of a checked pair: "" when the outputs agree.
  using CheckFn = std::function<std::string(int pair)>;
  // Appends samples and checks to `response`; false when a call failed.
  bool Run(const TimedFn& timed, const CheckFn& check, v1::MeasurePairResponse* response) const;
  // Wall budget for a session that lives through the whole loop.
  double SessionBudget(double per_call_seconds) const {
    return budget + per_call_seconds * (2 * warmup + 4 * block) + 120;
  }

  int warmup, min_pairs, max_pairs, block, check_every;
  double target, budget;
  uint64_t seed;
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
                                               const v1::CompileLimits& limits,
                                               bool kernelbench = false);
  // Evaluate's shared steps. CompileCandidate fills response->compile and
  // returns the outcome, or sets the final verdict and returns nullopt when
  // the evaluation ends there; Finish sets and counts the final verdict.
  std::optional<CompileOutcome> CompileCandidate(BackendKind backend,
                                                 const v1::EvaluateRequest& request,
                                                 bool kernelbench, v1::EvaluateResponse* response);
  VerifyConfig VerifyConfigFor(const v1::EvaluateRequest& request) const;
  void Finish(v1::EvaluateResponse* response, v1::Verdict verdict);
  // KernelBench-format requests (eval_engine_kb.cc).
  absl::StatusOr<std::shared_ptr<const KbTask>> ResolveKbTask(const v1::Task& task);
  absl::StatusOr<BackendKind> KbBackend(v1::Backend requested) const;
  absl::StatusOr<v1::CompileResponse> CompileKb(const v1::CompileRequest& request);
  absl::StatusOr<v1::EvaluateResponse> EvaluateKb(const v1::EvaluateRequest& request);
  absl::StatusOr<v1::MeasureResponse> MeasureKb(const v1::MeasureRequest& request);
  absl::StatusOr<v1::MeasurePairResponse> MeasurePairKb(const v1::MeasurePairRequest& request);
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
  // Degenerate-task probe outcome per (task content, device): the probe
  // that passed, or "" when none did.
  std::map<std::string, std::string> degenerate_ ABSL_GUARDED_BY(mu_);
};

}  // namespace crl

#endif  // CRL_SERVICES_WORKER_EVAL_ENGINE_H_
