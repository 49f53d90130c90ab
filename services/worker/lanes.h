// Exclusive execution lanes: one per GPU, or per configured CPU slot for the
// host backend. Verification and measurement hold a lane for their whole
// duration, so nothing else runs on that GPU meanwhile. In-memory and
// deterministic: unit tests use the real pool.
#ifndef CRL_SERVICES_WORKER_LANES_H_
#define CRL_SERVICES_WORKER_LANES_H_

#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/context.h"
#include "services/worker/runner_client.h"

namespace crl {

class LanePool;

// Holds a lane until destroyed. Movable.
class LaneLease {
 public:
  LaneLease(LanePool* pool, const Lane* lane) : pool_(pool), lane_(lane) {}
  LaneLease(LaneLease&& other) noexcept : pool_(other.pool_), lane_(other.lane_) {
    other.pool_ = nullptr;
  }
  LaneLease& operator=(LaneLease&&) = delete;
  ~LaneLease();
  const Lane& lane() const { return *lane_; }

 private:
  LanePool* pool_;
  const Lane* lane_;
};

// Thread-safe.
class LanePool {
 public:
  explicit LanePool(std::vector<Lane> lanes);
  // Waits for a free lane of `backend` until the request's deadline, at
  // most `max_wait` (the bound for requests without a deadline).
  // UNAVAILABLE when the worker has no such lane; CANCELLED when the
  // request is cancelled while waiting; DEADLINE_EXCEEDED when no lane freed
  // in time.
  absl::StatusOr<LaneLease> Acquire(BackendKind backend, const RequestContext& context,
                                    absl::Duration max_wait);
  const std::vector<Lane>& lanes() const { return lanes_; }
  bool Has(BackendKind backend) const;
  // Lanes held now, and requests waiting for one.
  int Busy() const;
  int Waiting() const;

 private:
  friend class LaneLease;
  void Release(const Lane* lane);

  const std::vector<Lane> lanes_;
  mutable absl::Mutex mu_;
  std::vector<bool> busy_ ABSL_GUARDED_BY(mu_);
  int waiting_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace crl

#endif  // CRL_SERVICES_WORKER_LANES_H_
