// KernelBench-format tasks in the worker (docs/kernelbench.md): a .py task
// file under the task root or inline, trials whose inputs the harness draws
// from the task's get_inputs() under secret seeds (the last from a normal
// distribution), degenerate-task probes, and sessions over harness processes
// (kb_session.h).
#ifndef CRL_SERVICES_WORKER_KB_FORMAT_H_
#define CRL_SERVICES_WORKER_KB_FORMAT_H_

#include <memory>
#include <string>

#include "services/worker/kb_session.h"
#include "services/worker/task_format.h"

namespace crl {

class DiskBudget;

struct KbFormatOptions {
  std::string task_root;
  // Inline task files are written under <work_dir>/kb-tasks.
  std::string work_dir = "/tmp/crl-work";
  KbOptions kb;
  RunnerOptions runner;
  // Keeps the written task files under a byte budget; not owned, may be null.
  DiskBudget* bundles = nullptr;
};

// Thread-safe.
class KbFormat final : public TaskFormatInterface {
 public:
  explicit KbFormat(KbFormatOptions options) : options_(std::move(options)) {}

  absl::StatusOr<std::shared_ptr<const EvalTask>> Resolve(const v1::Task& task) override;
  std::unique_ptr<SessionInterface> Start(const EvalTask& task, const SessionSpec& spec,
                                          const Lane& lane, const RequestContext& context,
                                          RunnerEvent* event) override;

 private:
  const KbFormatOptions options_;
};

}  // namespace crl

#endif  // CRL_SERVICES_WORKER_KB_FORMAT_H_
