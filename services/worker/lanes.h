// Exclusive execution lanes: one per GPU, or per configured CPU slot for the
// host backend. Verification and measurement hold a lane for their whole
// duration, so nothing else runs on that GPU meanwhile.
#ifndef CRL_SERVICES_WORKER_LANES_H_
#define CRL_SERVICES_WORKER_LANES_H_

#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
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
  // Waits up to `timeout` for a free lane of `backend`. UNAVAILABLE when the
  // worker has no such lane, DEADLINE_EXCEEDED when none freed in time.
  absl::StatusOr<LaneLease> Acquire(BackendKind backend, absl::Duration timeout);
  const std::vector<Lane>& lanes() const { return lanes_; }
  bool Has(BackendKind backend) const;
  int Busy() const;

 private:
  friend class LaneLease;
  void Release(const Lane* lane);

  const std::vector<Lane> lanes_;
  mutable absl::Mutex mu_;
  std::vector<bool> busy_ ABSL_GUARDED_BY(mu_);
};

}  // namespace crl

#endif  // CRL_SERVICES_WORKER_LANES_H_
