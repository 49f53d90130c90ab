// Builds a worker's parts (compiler, lanes, metrics, engine) from one options
// struct: shared by crl-worker's main() and the in-process worker of `crl eval`.
#ifndef CRL_SERVICES_WORKER_WORKER_SETUP_H_
#define CRL_SERVICES_WORKER_WORKER_SETUP_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/options.h"
#include "services/worker/eval_engine.h"

namespace crl {

struct WorkerOptions {
  EngineOptions engine;
  CompilerOptions compiler;
  // CPU slots for the host backend (0: no host lanes).
  int host_lanes = 1;
  // GPUs to serve: "auto" (every /dev/nvidiaN, if nvcc exists), "" (none) or
  // a list like "0,1".
  std::string gpus = "auto";
};

// Binds the worker's options (--host_lanes, --gpus, --cache_dir, ...).
void BindWorkerOptions(OptionSet* set, WorkerOptions* options);

// Fills paths left empty: the runner next to this executable, the include
// directory of this installation.
void ResolveDefaultPaths(WorkerOptions* options);

// A directory shipped with crl (e.g. "include", "tasks/native"), looked up
// next to the executable's installation and in the source tree. Empty if
// not found.
std::string FindShippedDir(const std::string& relative);

struct WorkerRuntime {
  std::unique_ptr<SandboxedCompiler> compiler;
  std::unique_ptr<LanePool> lanes;
  std::unique_ptr<WorkerMetrics> metrics;
  std::unique_ptr<EvalEngine> engine;
};

// `registry` may be null (no metrics).
absl::StatusOr<std::unique_ptr<WorkerRuntime>> BuildWorker(WorkerOptions options,
                                                           prometheus::Registry* registry);

}  // namespace crl

#endif  // CRL_SERVICES_WORKER_WORKER_SETUP_H_
