// The workers a timing service measures on. Every call of one timing
// request (evaluate, measure the pair) goes to one worker: an artifact
// lives in the build cache of the worker that built it, so a request that
// names the worker the orchestrator evaluated on (TimeRequest.worker) is
// measured there, and the others take the workers in turn.
#ifndef CRL_SERVICES_TIMING_WORKER_SET_H_
#define CRL_SERVICES_TIMING_WORKER_SET_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "services/worker/worker_client.h"

namespace crl::timing {

class WorkerSetInterface {
 public:
  virtual ~WorkerSetInterface() = default;
  // The worker for one request: the one `hint` names when it is in the set,
  // otherwise the next in turn. UNAVAILABLE when the set is empty. The
  // pointer stays valid for the set's lifetime.
  virtual absl::StatusOr<WorkerClientInterface*> Pick(const std::string& hint) = 0;
};

// One worker, whatever the hint (in-process timing, tests).
class SingleWorker final : public WorkerSetInterface {
 public:
  explicit SingleWorker(WorkerClientInterface* worker) : worker_(worker) {}
  absl::StatusOr<WorkerClientInterface*> Pick(const std::string&) override { return worker_; }

 private:
  WorkerClientInterface* worker_;
};

// Workers by address (common/resolve.h: a list, where dns:///NAME:PORT is
// every address NAME resolves to, re-resolved at most every `refresh`). A
// client per address is made on first use and kept. Thread-safe.
class WorkerSet final : public WorkerSetInterface {
 public:
  using Factory = std::function<absl::StatusOr<std::unique_ptr<WorkerClientInterface>>(const std::string& address)>;
  WorkerSet(std::vector<std::string> specs, Factory factory, ClockInterface* clock,
            absl::Duration refresh = absl::Seconds(30));

  absl::StatusOr<WorkerClientInterface*> Pick(const std::string& hint) override;
  // The addresses in the set now (resolving if due).
  std::vector<std::string> Addresses();

 private:
  absl::Status RefreshLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<WorkerClientInterface*> ClientLocked(const std::string& address) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::vector<std::string> specs_;
  Factory factory_;
  ClockInterface* clock_;
  const absl::Duration refresh_;
  absl::Mutex mu_;
  std::vector<std::string> addresses_ ABSL_GUARDED_BY(mu_);
  absl::Time resolved_at_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  size_t next_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, std::unique_ptr<WorkerClientInterface>> clients_ ABSL_GUARDED_BY(mu_);
};

}  // namespace crl::timing

#endif  // CRL_SERVICES_TIMING_WORKER_SET_H_
