#include "services/worker/lanes.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace crl {

LaneLease::~LaneLease() {
  if (pool_) pool_->Release(lane_);
}

absl::Status LaneLease::Upgrade(const RequestContext& context, absl::Duration max_wait) {
  return pool_->Upgrade(lane_, context, max_wait);
}

bool LaneLease::UpgradePending() const { return pool_ != nullptr && pool_->Upgrading(lane_); }

bool LaneLease::SharedWithOthers() const {
  return overlapped_at_start_ || (pool_ != nullptr && pool_->Overlaps(lane_) != overlaps_at_start_);
}

LanePool::LanePool(std::vector<Lane> lanes, LanePoolOptions options)
    : lanes_(std::move(lanes)),
      options_(std::move(options)),
      holders_(lanes_.size()),
      exclusive_(lanes_.size()),
      upgrading_(lanes_.size()),
      occupied_since_(lanes_.size()),
      overlaps_(lanes_.size()) {}

bool LanePool::Has(BackendKind backend) const {
  for (const Lane& l : lanes_) {
    if (l.backend == backend) return true;
  }
  return false;
}

int LanePool::Capacity(size_t lane) const {
  return lanes_[lane].backend == BackendKind::kCuda ? std::max(1, options_.verify_slots_per_gpu) : 1;
}

int LanePool::Busy() const {
  absl::MutexLock lock(&mu_);
  int n = 0;
  for (int h : holders_) n += h > 0;
  return n;
}

int LanePool::Waiting() const {
  absl::MutexLock lock(&mu_);
  return waiting_;
}

uint64_t LanePool::Overlaps(const Lane* lane) const {
  absl::MutexLock lock(&mu_);
  return overlaps_[lane - lanes_.data()];
}

absl::StatusOr<LaneLease> LanePool::Acquire(BackendKind backend, const RequestContext& context,
                                            absl::Duration max_wait, LaneUse use) {
  if (!Has(backend)) {
    return absl::UnavailableError(
        absl::StrCat("this worker has no ", BackendName(backend), " lane"));
  }
  return AcquireAny(backend, lanes_.size(), context, max_wait, use);
}

absl::StatusOr<LaneLease> LanePool::AcquireLane(size_t index, const RequestContext& context,
                                                absl::Duration max_wait, LaneUse use) {
  if (index >= lanes_.size()) {
    return absl::InvalidArgumentError(absl::StrCat("no lane ", index, " (", lanes_.size(), " lanes)"));
  }
  return AcquireAny(lanes_[index].backend, index, context, max_wait, use);
}

// `only` < lanes_.size(): that lane alone, and the wait is not counted.
absl::StatusOr<LaneLease> LanePool::AcquireAny(BackendKind backend, size_t only,
                                               const RequestContext& context, absl::Duration max_wait,
                                               LaneUse use) {
  const bool counted = only >= lanes_.size();
  // Cancellation is not a change of this pool's state, so it is looked at
  // between short slices of waiting.
  constexpr absl::Duration kSlice = absl::Milliseconds(100);
  ClockInterface* clock = context.clock();
  const absl::Time start = clock->Now();
  const absl::Time give_up = std::min(context.deadline(), start + max_wait);
  const bool exclusive = use == LaneUse::kExclusive;
  absl::MutexLock lock(&mu_);
  size_t found = lanes_.size();
  auto usable = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    // Timing waiting on this backend: no new sharer until it has its lane.
    if (use == LaneUse::kShared && exclusive_waiting_[backend] > 0) return false;
    found = lanes_.size();
    for (size_t i = 0; i < lanes_.size(); ++i) {
      if (lanes_[i].backend != backend || exclusive_[i] || (!counted && i != only)) continue;
      // A lease taking this lane alone: nothing new joins it.
      if (!exclusive && upgrading_[i]) continue;
      if (exclusive ? holders_[i] == 0 : holders_[i] < Capacity(i)) {
        if (found == lanes_.size() || holders_[i] < holders_[found]) found = i;
      }
    }
    return found != lanes_.size();
  };
  if (counted) ++waiting_;
  if (exclusive) ++exclusive_waiting_[backend];
  while (!usable()) {
    absl::Status live = context.Check();
    if (live.ok() && clock->Now() >= give_up) {
      live = absl::DeadlineExceededError(
          absl::StrCat("no ", BackendName(backend), " lane became free within ",
                       absl::FormatDuration(clock->Now() - start)));
    }
    if (!live.ok()) {
      if (counted) --waiting_;
      if (exclusive) --exclusive_waiting_[backend];
      return live;
    }
    mu_.AwaitWithTimeout(absl::Condition(&usable), kSlice);
  }
  if (counted) --waiting_;
  if (exclusive) --exclusive_waiting_[backend];
  const bool overlapped = holders_[found] > 0;
  if (overlapped) {
    ++overlaps_[found];
  } else {
    occupied_since_[found] = options_.clock->MonotonicNow();
  }
  ++holders_[found];
  exclusive_[found] = exclusive;
  return LaneLease(this, &lanes_[found], overlapped, overlaps_[found]);
}

bool LanePool::Upgrading(const Lane* lane) const {
  absl::MutexLock lock(&mu_);
  return upgrading_[lane - lanes_.data()];
}

absl::Status LanePool::Upgrade(const Lane* lane, const RequestContext& context, absl::Duration max_wait) {
  const size_t i = lane - lanes_.data();
  constexpr absl::Duration kSlice = absl::Milliseconds(100);
  ClockInterface* clock = context.clock();
  const absl::Time start = clock->Now();
  const absl::Time give_up = std::min(context.deadline(), start + max_wait);
  absl::MutexLock lock(&mu_);
  if (exclusive_[i]) return absl::OkStatus();
  if (upgrading_[i]) {
    return absl::FailedPreconditionError(
        absl::StrCat("another measurement is already waiting to hold lane ", lane->name, " alone"));
  }
  upgrading_[i] = true;
  auto alone = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return holders_[i] == 1; };
  while (!alone()) {
    absl::Status live = context.Check();
    if (live.ok() && clock->Now() >= give_up) {
      live = absl::DeadlineExceededError(absl::StrCat("lane ", lane->name, " was not left alone within ",
                                                      absl::FormatDuration(clock->Now() - start)));
    }
    if (!live.ok()) {
      upgrading_[i] = false;
      return live;
    }
    mu_.AwaitWithTimeout(absl::Condition(&alone), kSlice);
  }
  upgrading_[i] = false;
  exclusive_[i] = true;
  return absl::OkStatus();
}

void LanePool::Release(const Lane* lane) {
  absl::Duration occupied;
  {
    absl::MutexLock lock(&mu_);
    const size_t i = lane - lanes_.data();
    exclusive_[i] = false;
    if (--holders_[i] > 0) return;
    occupied = options_.clock->MonotonicNow() - occupied_since_[i];
  }
  if (options_.on_idle) options_.on_idle(*lane, occupied);
}

}  // namespace crl
