// KernelBench-format tasks in the worker (docs/kernelbench.md): a .py task
// file under the task root or inline, trials whose inputs the harness draws
// from the task's get_inputs() under secret seeds (the last from a normal
// distribution), degenerate-task probes, and sessions over harness processes
// (kb_session.h).
#ifndef CRL_SERVICES_WORKER_FORMATS_KERNELBENCH_KB_FORMAT_H_
#define CRL_SERVICES_WORKER_FORMATS_KERNELBENCH_KB_FORMAT_H_

#include <memory>
#include <string>

#include "services/worker/formats/kernelbench/kb_session.h"
#include "services/worker/formats/task_format.h"
#include "services/worker/lanes/warm_pool.h"

namespace crl {

class DiskBudget;

// Started, warmed harness processes per lane (warm_pool.h).
using KbWarmPool = WarmPool<RunnerSession>;

// A pool whose processes are `crl_kb_harness.py serve` in the runner's
// sandbox, warmed with KB_WARM (kb_session.h). Null when both sizes are 0.
std::unique_ptr<KbWarmPool> MakeKbWarmPool(LanePool* lanes, const RunnerOptions& runner, const KbOptions& kb,
                                           WarmPoolOptions options);

struct KbFormatOptions {
  std::string task_root;
  // Inline task files are written under <work_dir>/kb-tasks.
  std::string work_dir = "/tmp/crl-work";
  KbOptions kb;
  RunnerOptions runner;
  // Keeps the written task files under a byte budget; not owned, may be null.
  DiskBudget* bundles = nullptr;
  // Where sides' processes come from when one is ready; not owned, may be
  // null (every side starts its own).
  KbWarmPool* warm = nullptr;
};

// Thread-safe.
class KbFormat final : public TaskFormatInterface {
 public:
  explicit KbFormat(KbFormatOptions options) : options_(std::move(options)) {}

  absl::StatusOr<std::shared_ptr<const EvalTask>> Resolve(const v1::Task& task) override;
  std::unique_ptr<SessionInterface> Start(const EvalTask& task, const SessionSpec& spec,
                                          const Lane& lane, const RequestContext& context,
                                          RunnerEvent* event) override;
  // On a GPU lane: a harness from the warm pool, or one started here whose
  // torch import is waited for; nothing on a host lane (a host lane is one
  // CPU: a process starting there is its work, done under its lease).
  std::unique_ptr<PreparedSide> Prepare(const Lane& lane, double budget_seconds,
                                        const RequestContext& context) override;
  bool graph_replay() const override { return true; }

 private:
  const KbFormatOptions options_;
};

}  // namespace crl

#endif  // CRL_SERVICES_WORKER_FORMATS_KERNELBENCH_KB_FORMAT_H_
