#include "services/worker/lanes.h"

#include "absl/strings/str_cat.h"

namespace crl {

LaneLease::~LaneLease() {
  if (pool_) pool_->Release(lane_);
}

LanePool::LanePool(std::vector<Lane> lanes) : lanes_(std::move(lanes)), busy_(lanes_.size()) {}

bool LanePool::Has(BackendKind backend) const {
  for (const Lane& l : lanes_) {
    if (l.backend == backend) return true;
  }
  return false;
}

int LanePool::Busy() const {
  absl::MutexLock lock(&mu_);
  int n = 0;
  for (bool b : busy_) n += b;
  return n;
}

absl::StatusOr<LaneLease> LanePool::Acquire(BackendKind backend, absl::Duration timeout) {
  if (!Has(backend)) {
    return absl::UnavailableError(
        absl::StrCat("this worker has no ", BackendName(backend), " lane"));
  }
  absl::MutexLock lock(&mu_);
  size_t found = lanes_.size();
  auto free_lane = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (size_t i = 0; i < lanes_.size(); ++i) {
      if (lanes_[i].backend == backend && !busy_[i]) {
        found = i;
        return true;
      }
    }
    return false;
  };
  if (!mu_.AwaitWithTimeout(absl::Condition(&free_lane), timeout)) {
    return absl::DeadlineExceededError(absl::StrCat("no ", BackendName(backend),
                                                    " lane became free within ",
                                                    absl::FormatDuration(timeout)));
  }
  busy_[found] = true;
  return LaneLease(this, &lanes_[found]);
}

void LanePool::Release(const Lane* lane) {
  absl::MutexLock lock(&mu_);
  busy_[lane - lanes_.data()] = false;
}

}  // namespace crl
