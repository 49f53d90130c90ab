// The worker's logic, free of gRPC, written once for every task format:
// resolve the task (task_format.h), compile on the CPU tier (bounded by
// compile slots), then verify, measure or time in pairs on an exclusive lane.
// Used by the gRPC service (eval_service.h) and in-process by clients
// (worker_client.h: StartLocalWorker).
#ifndef CRL_SERVICES_WORKER_EVAL_ENGINE_H_
#define CRL_SERVICES_WORKER_EVAL_ENGINE_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "common/context.h"
#include "common/executor.h"
#include "crl/v1/eval.pb.h"
#include "services/worker/compile/compiler.h"
#include "services/worker/lanes/lanes.h"
#include "services/worker/verify/reference_cache.h"
#include "services/worker/formats/task_format.h"
#include "services/worker/verify/verifier.h"
#include "services/worker/worker_metrics.h"

namespace crl {

struct EngineOptions {
  // Concurrent compiles (the CPU tier). <= 0: the number of cores.
  int compile_slots = 0;
  // Longest wait for a lane when the request has no deadline of its own.
  absl::Duration lane_wait = absl::Minutes(5);
  VerifyConfig verify;
  // Measure defaults.
  int measure_iterations = 50;
  int measure_warmup = 5;
  double measure_call_timeout_seconds = 20;
  // Both sides of a GPU measurement run on one CPU (EvalEngine::TimingCpu).
  bool pin_gpu_timing = true;
  // Most seconds a verified pair is kept for its measurement
  // (EvaluateRequest.keep_for_timing_seconds).
  double max_keep_seconds = 60;
  // On a GPU lane, a verification lets go of its lane between two trials
  // while timing waits for it, its sides frozen until it has the lane back,
  // and verified sides wait for their measurement frozen and off the lane
  // (LaneLease::StepAside). False: a verification holds its lane to its
  // end and kept sides hold their slot (timing then waits for both).
  bool step_aside_for_timing = true;
  // Reference outputs kept for later verifications of the same task
  // (reference_cache.h; max_bytes 0: off).
  ReferenceCacheOptions reference_cache;
  // Verifications, per lane of the worker, that may ready their sides'
  // processes before they hold a lane (TaskFormatInterface::Prepare: two
  // processes each, torch imported, with a CUDA context when taken from the
  // warm pool). Bounds what requests waiting for a lane hold; those beyond
  // it start their sides under the lease. 0: never readied.
  int ready_ahead_per_lane = 8;
};

// The formats an engine serves (both required, not owned).
struct TaskFormats {
  TaskFormatInterface* native = nullptr;
  TaskFormatInterface* kernelbench = nullptr;
};

// Thread-safe: requests run concurrently, limited by compile slots and lanes.
class EvalEngine {
 public:
  // `compiler`, `lanes`, the formats, `metrics` (may be null) and `clock`
  // must outlive the engine.
  EvalEngine(EngineOptions options, CompilerInterface* compiler, LanePool* lanes,
             TaskFormats formats, WorkerMetrics* metrics, ClockInterface* clock,
             SeedSource seeds = SecureSeedSource());
  // Ends the pairs still kept.
  ~EvalEngine();

  // Non-OK statuses are request errors (INVALID_ARGUMENT naming the field,
  // NOT_FOUND, FAILED_PRECONDITION for a broken task), overload (UNAVAILABLE,
  // DEADLINE_EXCEEDED) or the request ending (CANCELLED, DEADLINE_EXCEEDED:
  // its lane is released at once). Evaluation outcomes, INFRA_ERROR
  // included, are verdicts in the response.
  absl::StatusOr<v1::CompileResponse> Compile(const v1::CompileRequest& request,
                                              const RequestContext& context);
  absl::StatusOr<v1::EvaluateResponse> Evaluate(const v1::EvaluateRequest& request,
                                                const RequestContext& context);
  absl::StatusOr<v1::MeasureResponse> Measure(const v1::MeasureRequest& request,
                                              const RequestContext& context);
  absl::StatusOr<v1::MeasurePairResponse> MeasurePair(const v1::MeasurePairRequest& request,
                                                      const RequestContext& context);
  v1::WorkerInfo Info() const;
  ReferenceCache::Stats ReferenceCacheStats() const { return reference_cache_.stats(); }

  // Ends the kept pairs whose time is up (EvaluateRequest.
  // keep_for_timing_seconds), letting go of their lanes. A thread of the
  // engine calls it every 100 ms; tests call it after moving the clock.
  void DropExpiredKept();
  // Pairs kept now.
  int KeptPairs() const;
  // Blocks until the sides handed to Retire have ended and their lanes
  // are let go (tests; the destructor does it too).
  void WaitRetired();

 private:
  // A verified candidate's two sides (or its candidate alone, when the
  // reference's answers came from the cache on a host lane), still on their
  // lane, waiting for the measurement that names `token` (defined in
  // engine_parts.h; kept and taken in eval_engine_measure.cc).
  struct KeptPair;
  // A request's task, its format and the backend it runs on.
  struct Resolved {
    TaskFormatInterface* format = nullptr;
    std::shared_ptr<const EvalTask> task;
    BackendKind backend = BackendKind::kHost;
  };
  absl::StatusOr<Resolved> Resolve(const v1::Task& task, v1::Backend requested) const;
  absl::StatusOr<CompileOutcome> CompileSource(TaskFormat format, BackendKind backend,
                                               const std::string& source,
                                               const std::string& filename,
                                               const v1::CompileLimits& limits,
                                               const RequestContext& context);
  // What the reference side loads: the task's compiled reference (native),
  // or "" when the task file runs as its own reference (KernelBench).
  absl::StatusOr<std::string> ReferenceArtifact(const Resolved& r, const RequestContext& context);
  // Starts one side (taking over `prepared`'s process when given); counts it.
  std::unique_ptr<SessionInterface> StartSession(const Resolved& r, Side side,
                                                 const std::string& artifact, double budget,
                                                 const Lane& lane, const RequestContext& context,
                                                 RunnerEvent* event, PreparedSide* prepared = nullptr);
  // Processes readied for a verification's sides on its lane before the
  // lane is held (TaskFormatInterface::Prepare): the reference's (unless
  // `reference` is false) on a starter thread, as StartPair starts it, and
  // the candidate's here. Either may be null.
  struct ReadySides {
    std::unique_ptr<PreparedSide> reference, candidate;
  };
  ReadySides PrepareSides(const Resolved& r, const Lane& lane, bool reference, double budget,
                          const RequestContext& context);
  // A verification's lease, its sides readied first (PrepareSides, the
  // reference unless its answers are recorded and `reference_for_timing` is
  // false) for the lane it then waits for: the least held, while fewer than
  // ready_ahead_per_lane per lane hold readied sides. When the format
  // readies nothing, any lane of the backend. *readying: time spent readying.
  absl::StatusOr<LaneLease> AcquireReadied(const Resolved& r, const std::string& reference,
                                           const VerifyConfig& config, LaneUse use, bool reference_for_timing,
                                           double budget, const RequestContext& context, ReadySides* ready,
                                           absl::Duration* readying);
  // The degenerate-task probe runs once per task content and lane: its key.
  static std::string ProbeKey(const Resolved& r, const Lane& lane);
  // Both sides of an evaluation, started at once (a side's start imports,
  // initialises the device and constructs the model: seconds for
  // KernelBench), the reference on a thread of its own. A side that failed
  // to start is null, with its event.
  struct SessionPair {
    std::unique_ptr<SessionInterface> reference, candidate;
    RunnerEvent reference_event, candidate_event;
  };
  // Ends the sides of a finished verification or measurement off the
  // request's path: a process's exit (a CUDA context's teardown takes tens
  // of milliseconds, a torch harness's more) would otherwise delay the
  // answer. `lease` is let go only once both have ended, so nothing that
  // needs the lane alone overlaps a teardown. Either side may be null;
  // `task` (which sides may refer to) lives until they have ended.
  void Retire(std::shared_ptr<const EvalTask> task, LaneLease lease, std::unique_ptr<SessionInterface> candidate,
              std::unique_ptr<SessionInterface> reference);
  // The CPU both sides of a measurement on `lane` are pinned to; -1: none.
  int TimingCpu(const Lane& lane) const;
  // Leases on `lane` step aside for timing (EngineOptions::step_aside_for_
  // timing; a GPU lane only: elsewhere nothing runs beside a verification).
  bool StepsAside(const Lane& lane) const {
    return options_.step_aside_for_timing && lane.backend == BackendKind::kCuda;
  }
  SessionPair StartPair(const Resolved& r, const std::string& reference_artifact,
                        const std::string& candidate_artifact, double budget, const Lane& lane,
                        const RequestContext& context, ReadySides* ready = nullptr);
  // One measurement with fresh sides into *response (MeasurePair's body),
  // the lane held alone from before the sides start.
  // `kept`, when given: verified sides to time instead of starting two
  // (their lease is upgraded to hold the lane alone); when that cannot be
  // done, they end and fresh ones start.
  absl::Status MeasureOnce(const Resolved& r, const std::string& reference_artifact,
                           const std::string& candidate_artifact, const v1::MeasurePairRequest& request,
                           std::unique_ptr<KeptPair> kept, const RequestContext& context,
                           v1::MeasurePairResponse* response);
  // Keeps a verified pair with its lease for `seconds`; the token, or ""
  // when it cannot be kept (the sides are then ended by the caller). A null
  // `reference` keeps the candidate alone (its measurement starts the
  // reference).
  std::string Keep(const Resolved& r, const std::string& reference_artifact, const std::string& library_path,
                   LaneLease& lease, std::unique_ptr<SessionInterface>& reference,
                   std::unique_ptr<SessionInterface>& candidate, double seconds);
  // The kept pair `token` when it belongs to this task and artifacts (it
  // leaves the store either way); null with *why set otherwise.
  std::unique_ptr<KeptPair> TakeKept(const std::string& token, const Resolved& r,
                                     const std::string& reference_artifact, const std::string& library_path,
                                     std::string* why);
  // Starts both sides on a lane taken as `use` and verifies; the verdict is
  // set, not yet counted (Finish). *contended, when given: how the run
  // shared the GPU ("shared it with another verification", or ran its two
  // sides at once), "" when it did not.
  absl::StatusOr<v1::EvaluateResponse> VerifyOnLane(const Resolved& r, v1::EvaluateResponse response,
                                                    const std::string& reference, const std::string& library_path,
                                                    const VerifyConfig& config, LaneUse use,
                                                    const RequestContext& context, std::string* contended,
                                                    double keep_seconds = 0);
  VerifyConfig VerifyConfigFor(const v1::EvaluateRequest& request) const;
  // Sets and counts the final verdict of an evaluation.
  void Finish(v1::EvaluateResponse* response, v1::Verdict verdict);
  // Probe outcome per (task content, lane), if known.
  std::optional<std::vector<std::string>> KnownDegenerate(const std::string& key);
  absl::Status AcquireCompileSlot(const RequestContext& context);
  void ReleaseCompileSlot();

  const EngineOptions options_;
  CompilerInterface* compiler_;
  LanePool* lanes_;
  const TaskFormats formats_;
  WorkerMetrics* metrics_;
  ClockInterface* clock_;
  SeedSource seeds_;
  const int compile_slots_;
  ReferenceCache reference_cache_;

  mutable absl::Mutex mu_;
  int compiles_running_ ABSL_GUARDED_BY(mu_) = 0;
  // Degenerate-task probe outcome per (task content, lane): the trivial
  // solution that passed, or "" when none did.
  std::map<std::string, std::vector<std::string>> degenerate_ ABSL_GUARDED_BY(mu_);
  // Verified pairs kept for their measurement, by token; and what their
  // sides answer to meanwhile (no request owns them).
  std::map<std::string, std::unique_ptr<KeptPair>> kept_ ABSL_GUARDED_BY(mu_);
  uint64_t kept_count_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  RequestContext kept_context_;
  // Starts reference sides beside their candidates (StartPair). Its threads
  // live as long as the engine: a runner dies with the thread that spawned
  // it (PR_SET_PDEATHSIG follows the thread, not the process), so a
  // short-lived thread would take its side down with it when it ends.
  // Sized for the references of 32 requests readying or starting at once.
  BoundedExecutor starters_{{"side-start", 32, 256}};
  // Ends expired kept pairs (DropExpiredKept).
  std::thread reaper_;
  // Sides handed to Retire and not yet ended.
  int retiring_ ABSL_GUARDED_BY(mu_) = 0;
  // Verifications holding sides readied before their lease
  // (EngineOptions::ready_ahead_per_lane).
  int readying_ ABSL_GUARDED_BY(mu_) = 0;
  // Ends retired sides (Retire). Last: destroyed first, it ends what is
  // queued while everything those sides use is still alive.
  BoundedExecutor enders_{{"side-end", 4, 4096}};
};

}  // namespace crl

#endif  // CRL_SERVICES_WORKER_EVAL_ENGINE_H_
