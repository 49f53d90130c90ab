// The workers a run's candidates go to: each evaluation on the healthy
// worker with the fewest candidates in flight (at most
// max_in_flight_per_lane times the worker's lanes, which the pool asks it
// for (GetWorkerInfo) after its first answer; a caller waits for a slot
// within its request's deadline). A verified candidate may keep its slot while it is
// timed on the same worker (Lease): the worker's lane is busy measuring it,
// and a verification sent there meanwhile would wait while another
// worker's lane idles. A worker that fails with an infrastructure error is
// avoided for a cool-off period, and the caller's retry goes elsewhere.
#ifndef CRL_SERVICES_ORCHESTRATOR_WORKER_POOL_H_
#define CRL_SERVICES_ORCHESTRATOR_WORKER_POOL_H_

#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "common/context.h"
#include "services/worker/worker_client.h"

namespace crl::orchestrator {

struct PooledWorker {
  std::string name;  // its address, for logs and evidence
  WorkerClientInterface* client = nullptr;
};

// Thread-safe.
class WorkerPool {
 public:
  WorkerPool(std::vector<PooledWorker> workers, int max_in_flight_per_lane, ClockInterface* clock,
             absl::Duration cool_off = absl::Seconds(10));

  // A slot kept after its evaluation; released when the lease ends.
  class Lease {
   public:
    Lease() = default;
    Lease(Lease&& other) noexcept { *this = std::move(other); }
    Lease& operator=(Lease&& other) noexcept;
    ~Lease() { Release(); }
    void Release();
    bool held() const { return pool_ != nullptr; }

   private:
    friend class WorkerPool;
    WorkerPool* pool_ = nullptr;
    int index_ = -1;
  };

  struct Result {
    absl::StatusOr<v1::EvaluateResponse> response;
    std::string worker;
  };
  // Evaluates on a worker not in `avoid` when one is free or will be (else
  // on any). The response's status is the worker's; the caller decides what
  // counts as an infrastructure failure (ReportFailure cools the worker off).
  // With `keep`, a response that came back OK keeps its slot in `*keep`
  // (whatever `*keep` held before is released first).
  absl::StatusOr<Result> Evaluate(const v1::EvaluateRequest& request, const std::set<std::string>& avoid,
                                  const RequestContext& context, Lease* keep = nullptr);
  void ReportFailure(const std::string& worker);
  // The workers now (a re-resolved headless Service): new ones join, absent
  // ones take no new evaluations (their calls in flight finish). Clients
  // must outlive the pool.
  void SetWorkers(const std::vector<PooledWorker>& workers);

  // Workers present now.
  int size() const;
  // Candidates a worker may hold at once (its lanes as far as known).
  int capacity(const std::string& worker) const;
  // Evaluations in flight over all workers (kept slots included).
  int in_flight() const;

 private:
  struct Slot {
    PooledWorker worker;
    int in_flight = 0;
    int lanes = 0;  // 0: not known yet (counts as one)
    bool asking = false;
    // A worker whose GetWorkerInfo failed is asked again after the
    // cool-off, not after each evaluation.
    absl::Time ask_after = absl::InfinitePast();
    absl::Time cooling_until = absl::InfinitePast();
    bool present = true;
  };
  void ReleaseSlot(int index);
  // Asks the worker of slot `index` for its lanes, once it has answered: a
  // worker without GetWorkerInfo (UNIMPLEMENTED: an older one) keeps one
  // lane's share; another failure is asked again after the cool-off.
  void LearnLanes(int index, const RequestContext& context);
  // The index of the slot to use now, or -1 when none is free.
  int PickLocked(const std::set<std::string>& avoid) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int max_in_flight_;
  ClockInterface* clock_;
  const absl::Duration cool_off_;
  mutable absl::Mutex mu_;
  std::vector<Slot> slots_ ABSL_GUARDED_BY(mu_);
};

}  // namespace crl::orchestrator

#endif  // CRL_SERVICES_ORCHESTRATOR_WORKER_POOL_H_
