// Native tasks in the worker (docs/task-format.md): a task directory under the
// task root or an inline bundle, trials over every size set and input
// distribution with inputs generated here, and sessions over crl-runner
// processes that load a compiled library.
#ifndef CRL_SERVICES_WORKER_FORMATS_NATIVE_NATIVE_FORMAT_H_
#define CRL_SERVICES_WORKER_FORMATS_NATIVE_NATIVE_FORMAT_H_

#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "lib/task/native_task.h"
#include "services/worker/lanes/runner_client.h"
#include "services/worker/formats/task_format.h"
#include "services/worker/lanes/warm_pool.h"

namespace crl {

class DiskBudget;

// Started crl-runner processes per lane with their backend up and no library
// (RunnerSession::SpawnWarm): a native side then costs a library load, not a
// sandbox set-up and a device context. Null when both sizes are 0.
using NativeWarmPool = WarmPool<RunnerSession>;
std::unique_ptr<NativeWarmPool> MakeNativeWarmPool(LanePool* lanes, const RunnerOptions& runner,
                                                   WarmPoolOptions options);

struct NativeFormatOptions {
  // Task paths resolve against this directory and may not leave it (empty:
  // any path).
  std::string task_root;
  // Inline bundles are unpacked under <work_dir>/tasks.
  std::string work_dir = "/tmp/crl-work";
  RunnerOptions runner;
  // Keeps the unpacked bundles under a byte budget; not owned, may be null.
  DiskBudget* bundles = nullptr;
  // Warm runners to take sides from; not owned, may be null (every side
  // starts its own runner).
  NativeWarmPool* warm = nullptr;
};

// Thread-safe.
class NativeFormat final : public TaskFormatInterface {
 public:
  explicit NativeFormat(NativeFormatOptions options) : options_(std::move(options)) {}

  // Loads task.yaml once per directory, again when it changes (mtime).
  absl::StatusOr<std::shared_ptr<const EvalTask>> Resolve(const v1::Task& task) override;
  std::unique_ptr<SessionInterface> Start(const EvalTask& task, const SessionSpec& spec,
                                          const Lane& lane, const RequestContext& context,
                                          RunnerEvent* event) override;

 private:
  struct Cached {
    std::shared_ptr<const EvalTask> task;
    int64_t mtime_ns = 0;
  };
  const NativeFormatOptions options_;
  absl::Mutex mu_;
  std::map<std::string, Cached> cache_ ABSL_GUARDED_BY(mu_);
};

// A loaded native task as the engine sees it (exposed for tests).
std::shared_ptr<const EvalTask> MakeNativeEvalTask(NativeTask task);

}  // namespace crl

#endif  // CRL_SERVICES_WORKER_FORMATS_NATIVE_NATIVE_FORMAT_H_
