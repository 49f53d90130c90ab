#include "services/worker/lanes.h"

#include <algorithm>

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

int LanePool::Waiting() const {
  absl::MutexLock lock(&mu_);
  return waiting_;
}

absl::StatusOr<LaneLease> LanePool::Acquire(BackendKind backend, const RequestContext& context,
                                            absl::Duration max_wait) {
  if (!Has(backend)) {
    return absl::UnavailableError(
        absl::StrCat("this worker has no ", BackendName(backend), " lane"));
  }
  // Cancellation is not a change of this pool's state, so it is looked at
  // between short slices of waiting.
  constexpr absl::Duration kSlice = absl::Milliseconds(100);
  ClockInterface* clock = context.clock();
  const absl::Time start = clock->Now();
  const absl::Time give_up = std::min(context.deadline(), start + max_wait);
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
  ++waiting_;
  while (!free_lane()) {
    absl::Status live = context.Check();
    if (live.ok() && clock->Now() >= give_up) {
      live = absl::DeadlineExceededError(
          absl::StrCat("no ", BackendName(backend), " lane became free within ",
                       absl::FormatDuration(clock->Now() - start)));
    }
    if (!live.ok()) {
      --waiting_;
      return live;
    }
    mu_.AwaitWithTimeout(absl::Condition(&free_lane), kSlice);
  }
  --waiting_;
  busy_[found] = true;
  return LaneLease(this, &lanes_[found]);
}

void LanePool::Release(const Lane* lane) {
  absl::MutexLock lock(&mu_);
  busy_[lane - lanes_.data()] = false;
}

}  // namespace crl
