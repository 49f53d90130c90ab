// Builds a worker's parts (compiler, lanes, task formats, metrics, engine)
// from one options struct: shared by crl-worker's main() and the in-process
// worker of clients (StartLocalWorker in worker_client.h).
#ifndef CRL_SERVICES_WORKER_WORKER_SETUP_H_
#define CRL_SERVICES_WORKER_WORKER_SETUP_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/clock.h"
#include "common/options.h"
#include "services/worker/compile/disk_budget.h"
#include "services/worker/eval_engine.h"
#include "services/worker/formats/kernelbench/kb_format.h"
#include "services/worker/formats/kernelbench/kb_session.h"
#include "services/worker/formats/native/native_format.h"
#include "services/worker/lanes/runner_client.h"

namespace crl {

struct WorkerOptions {
  EngineOptions engine;
  CompilerOptions compiler;
  RunnerOptions runner;
  // KernelBench tasks: interpreter, harness, float32 tolerance, probes.
  KbOptions kb;
  // Task paths in requests resolve against this directory and may not leave
  // it. Empty: any path (in-process workers).
  std::string task_root;
  // Where inline task bundles are unpacked.
  std::string work_dir = "/tmp/crl-work";
  // CPU slots for the host backend (0: no host lanes).
  int host_lanes = 1;
  // Verifications at once on one GPU lane (measurement is always alone).
  int verify_slots_per_gpu = 4;
  // Bytes of recorded reference answers (ReferenceCacheOptions::max_bytes);
  // -1: sized to this worker's memory (ReferenceCacheBytesFor); 0: off.
  int64_t reference_cache_bytes = -1;
  // Timing windows on GPU lanes (LanePoolOptions::timing_batch).
  int timing_batch = 4;
  double timing_delay_seconds = 5;
  // Warm KernelBench harness processes kept per lane (warm_pool.h).
  WarmPoolOptions warm;
  // Warm crl-runner processes (backend up, no library) for native tasks.
  WarmPoolOptions native_warm = [] {
    WarmPoolOptions o;
    o.per_gpu = 4;
    o.per_host_lane = 2;
    return o;
  }();
  // GPUs to serve: "auto" (every /dev/nvidiaN, if nvcc exists), "" (none) or
  // a list like "0,1".
  std::string gpus = "auto";
  // Byte budgets of the build cache's objects and of the unpacked task
  // bundles under work_dir (disk_budget.h; 0: unbounded). Below the chart's
  // emptyDir limits, so eviction happens before the kubelet evicts the pod.
  int64_t cache_max_bytes = int64_t{16} << 30;
  int64_t work_max_bytes = int64_t{8} << 30;
};

// Binds the worker's options (--host_lanes, --gpus, --cache_dir, ...).
void BindWorkerOptions(OptionSet* set, WorkerOptions* options);

// Fills paths left empty: the runner next to this executable, the include
// directory and harness of this installation.
void ResolveDefaultPaths(WorkerOptions* options);

struct WorkerRuntime {
  // Logs where requests waited for lanes (LanePool::Waits), how the warm
  // pool and the reference cache served.
  ~WorkerRuntime();
  // First: outlives everything that reports to it (the lanes' idle callback
  // fires when a warm pool's filler lets go of its lease while the pools end).
  std::unique_ptr<WorkerMetrics> metrics;
  std::unique_ptr<DiskBudget> cache_budget;
  std::unique_ptr<DiskBudget> work_budget;
  std::unique_ptr<SandboxedCompiler> compiler;
  std::unique_ptr<LanePool> lanes;
  // Before the formats and the engine that take from it, after the lanes
  // it leases: destroyed (its processes killed) before the lanes go.
  std::unique_ptr<KbWarmPool> kb_warm;
  std::unique_ptr<NativeWarmPool> native_warm;
  std::unique_ptr<TaskFormatInterface> native;
  std::unique_ptr<TaskFormatInterface> kernelbench;
  std::unique_ptr<EvalEngine> engine;
};

// The worker's start-up self-test (before readiness turns on): the shipped
// native row_sum task's reference, submitted as a candidate, must compile and
// verify (VERDICT_OK) on the host backend when there are host lanes, else on
// cuda. FAILED_PRECONDITION naming what failed; OK when no task is shipped
// beside the binary (nothing to test with: logged).
absl::Status SelfTest(EvalEngine* engine, const WorkerOptions& options);

// `registry` may be null (no metrics); `clock` must outlive the runtime.
absl::StatusOr<std::unique_ptr<WorkerRuntime>> BuildWorker(WorkerOptions options,
                                                           prometheus::Registry* registry,
                                                           ClockInterface* clock = RealClock::Get());

}  // namespace crl

#endif  // CRL_SERVICES_WORKER_WORKER_SETUP_H_
