// A bounded thread pool for work that must not run on gRPC's reactor threads
// (compiles, runner round trips, GPU work). A full queue is an answer, not a
// wait: Submit returns RESOURCE_EXHAUSTED so the RPC can tell its caller to
// back off.
#ifndef CRL_COMMON_EXECUTOR_H_
#define CRL_COMMON_EXECUTOR_H_

#include <cstddef>
#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace crl {

struct ExecutorOptions {
  // Name used in thread names and error messages.
  std::string name = "executor";
  // Worker threads. Must be >= 1.
  int threads = 1;
  // Tasks that may wait for a thread; 0 means a task is accepted only when
  // a thread is idle.
  int max_queue = 64;
};

// Thread-safe. Destruction calls Shutdown().
class BoundedExecutor {
 public:
  explicit BoundedExecutor(ExecutorOptions options);
  ~BoundedExecutor();
  BoundedExecutor(const BoundedExecutor&) = delete;
  BoundedExecutor& operator=(const BoundedExecutor&) = delete;

  // Queues `task`. RESOURCE_EXHAUSTED when the queue is full, UNAVAILABLE
  // after Shutdown(). A task that throws terminates the process (broken
  // invariant): tasks report errors through their own channels.
  absl::Status Submit(std::function<void()> task);

  // Stops accepting work, runs what is queued, joins the threads. Idempotent.
  void Shutdown();

  // Tasks waiting (not running).
  int QueueDepth() const;
  // Tasks running now.
  int Busy() const;
  const ExecutorOptions& options() const { return options_; }

 private:
  void WorkerLoop();

  const ExecutorOptions options_;
  mutable absl::Mutex mu_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  int idle_ ABSL_GUARDED_BY(mu_) = 0;
  int busy_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  absl::Mutex join_mu_;  // serializes Shutdown()
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(join_mu_);
};

}  // namespace crl

#endif  // CRL_COMMON_EXECUTOR_H_
