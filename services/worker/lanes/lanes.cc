#include "services/worker/lanes/lanes.h"

#include <algorithm>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status.h"

namespace crl {

LaneLease::~LaneLease() {
  if (pool_ && !aside_) pool_->Release(lane_, use_);
}

absl::Status LaneLease::Upgrade(const RequestContext& context, absl::Duration max_wait) {
  return pool_->Upgrade(lane_, context, max_wait);
}

bool LaneLease::UpgradePending() const { return pool_ != nullptr && pool_->Upgrading(lane_); }

bool LaneLease::TimingWaiting() const { return pool_ != nullptr && pool_->TimingWaiting(lane_); }

void LaneLease::StepAside() {
  if (!pool_ || aside_) return;
  pool_->Release(lane_, use_);
  aside_ = true;
}

absl::Status LaneLease::Rejoin(LaneUse use, const RequestContext& context, absl::Duration max_wait) {
  if (!pool_ || !aside_) return absl::OkStatus();
  const size_t index = lane_ - pool_->lanes_.data();
  auto taken = pool_->Take(lane_->backend, index, true, true, use, context, max_wait);
  if (!taken.ok()) return taken.status();
  overlapped_ = overlapped_ || taken->overlapped;
  use_ = use;
  aside_ = false;
  return absl::OkStatus();
}

bool LaneLease::SharedWithOthers() const {
  return overlapped_ || (pool_ != nullptr && pool_->Overlaps(lane_) != overlaps_at_start_);
}

LanePool::LanePool(std::vector<Lane> lanes, LanePoolOptions options)
    : lanes_(std::move(lanes)),
      options_(std::move(options)),
      holders_(lanes_.size()),
      exclusive_(lanes_.size()),
      upgrading_(lanes_.size()),
      occupied_since_(lanes_.size()),
      overlaps_(lanes_.size()),
      rejoining_(lanes_.size()),
      starts_(lanes_.size()),
      window_open_(lanes_.size()),
      window_waiters_(lanes_.size()),
      window_since_(lanes_.size()),
      window_emptied_(lanes_.size()) {}

std::string LaneWaits::Describe() const {
  auto s = [](absl::Duration d) { return absl::StrFormat("%.1f s", absl::ToDoubleSeconds(d)); };
  return absl::StrCat("timing waited ", s(timing_behind_verifications), " behind verifications, ",
                      s(timing_behind_starts), " behind warm-pool starts, ", s(timing_behind_timing),
                      " behind other timing; verifications waited ", s(verification_behind_timing),
                      " behind timing, ", s(verification_behind_slots), " behind full slots; ", windows,
                      " timing window(s) open ", s(windows_open), ", ", s(window_emptying),
                      " of it emptying the GPU (longest ", s(longest_emptying), ")");
}

LaneWaits LanePool::Waits() const {
  absl::MutexLock lock(&mu_);
  return waits_;
}

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
  CRL_ASSIGN_OR_RETURN(Taken t, Take(backend, lanes_.size(), true, false, use, context, max_wait));
  return LaneLease(this, &lanes_[t.lane], t.overlapped, t.overlaps, use);
}

absl::StatusOr<LaneLease> LanePool::AcquireLane(size_t index, const RequestContext& context,
                                                absl::Duration max_wait, LaneUse use) {
  if (index >= lanes_.size()) {
    return absl::InvalidArgumentError(absl::StrCat("no lane ", index, " (", lanes_.size(), " lanes)"));
  }
  CRL_ASSIGN_OR_RETURN(Taken t, Take(lanes_[index].backend, index, false, false, use, context, max_wait));
  return LaneLease(this, &lanes_[t.lane], t.overlapped, t.overlaps, use);
}

size_t LanePool::LeastHeld(BackendKind backend) const {
  absl::MutexLock lock(&mu_);
  std::vector<size_t> least;
  for (size_t i = 0; i < lanes_.size(); ++i) {
    if (lanes_[i].backend != backend) continue;
    if (!least.empty() && holders_[i] > holders_[least[0]]) continue;
    if (!least.empty() && holders_[i] < holders_[least[0]]) least.clear();
    least.push_back(i);
  }
  if (least.empty()) return lanes_.size();
  return least[turn_++ % least.size()];
}

absl::StatusOr<LaneLease> LanePool::AcquireOn(size_t index, const RequestContext& context, absl::Duration max_wait,
                                              LaneUse use) {
  if (index >= lanes_.size()) {
    return absl::InvalidArgumentError(absl::StrCat("no lane ", index, " (", lanes_.size(), " lanes)"));
  }
  CRL_ASSIGN_OR_RETURN(Taken t, Take(lanes_[index].backend, index, true, false, use, context, max_wait));
  return LaneLease(this, &lanes_[t.lane], t.overlapped, t.overlaps, use);
}

absl::StatusOr<LanePool::Taken> LanePool::Take(BackendKind backend, size_t only, bool counted, bool rejoin,
                                               LaneUse use, const RequestContext& context,
                                               absl::Duration max_wait) {
  // Cancellation is not a change of this pool's state, so it is looked at
  // between short slices of waiting.
  constexpr absl::Duration kSlice = absl::Milliseconds(100);
  ClockInterface* clock = context.clock();
  const absl::Time start = clock->Now();
  const absl::Time give_up = std::min(context.deadline(), start + max_wait);
  const bool quiet = use == LaneUse::kQuiet;
  const bool exclusive = use == LaneUse::kExclusive || quiet;
  const bool back = rejoin && use == LaneUse::kShared;
  absl::MutexLock lock(&mu_);
  size_t found = lanes_.size();
  // Host lanes (one CPU, never shared) open a window at the first wait.
  const bool windowed = backend == BackendKind::kCuda;
  // The lane whose window this request waits in (a measurement, once its
  // window opens): lanes_.size() until then.
  size_t target = lanes_.size();
  auto may_use = [&](size_t i) { return lanes_[i].backend == backend && (only >= lanes_.size() || i == only); };
  auto usable = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    found = lanes_.size();
    for (size_t i = 0; i < lanes_.size(); ++i) {
      if (!may_use(i) || exclusive_[i]) continue;
      // Timing as launched: only once the rest of the worker is quiet.
      if (quiet && !OthersQuiet(i)) continue;
      // A timing window holding this lane back: no new sharer (nor start)
      // until every measurement waiting in it has had a lane.
      if (!exclusive && HeldBack(i)) continue;
      // A lease taking this lane alone: nothing new joins it.
      if (!exclusive && upgrading_[i]) continue;
      // Verifications coming back from stepping aside go first.
      if (use == LaneUse::kShared && !back && rejoining_[i] > 0) continue;
      if (exclusive ? holders_[i] == 0 : holders_[i] < Capacity(i)) {
        if (found == lanes_.size() || holders_[i] < holders_[found]) found = i;
      }
    }
    return found != lanes_.size();
  };
  auto stop_waiting = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (counted) --waiting_;
    if (exclusive) --exclusive_waiting_[backend];
    if (back) --rejoining_[only];
    if (target < lanes_.size()) --window_waiters_[target];
  };
  const absl::Time waiting_since = options_.clock->MonotonicNow();
  // Timing: waits in a window on one lane, opened once enough measurements
  // wait on the backend or this one has waited long enough, or joined at
  // once while a window is open on a lane it may use: the lane it would
  // empty soonest (an open window nobody waits in yet, else the fewest
  // holders, else the fewest measurements waiting there). Only that lane
  // stops taking verifications: a host's other GPUs go on verifying.
  auto maybe_open = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!exclusive || target < lanes_.size()) return;
    bool any_open = false;
    for (size_t i = 0; i < lanes_.size(); ++i) any_open = any_open || (may_use(i) && window_open_[i]);
    if (windowed && !any_open && exclusive_waiting_[backend] < std::max(1, options_.timing_batch) &&
        options_.clock->MonotonicNow() - waiting_since < options_.timing_delay) {
      return;
    }
    auto rank = [&](size_t i) {
      return std::make_tuple(!(window_open_[i] && window_waiters_[i] == 0), window_waiters_[i], holders_[i]);
    };
    for (size_t i = 0; i < lanes_.size(); ++i) {
      if (may_use(i) && (target == lanes_.size() || rank(i) < rank(target))) target = i;
    }
    ++window_waiters_[target];
    if (!window_open_[target]) OpenWindow(target);
  };
  if (counted) ++waiting_;
  if (exclusive) ++exclusive_waiting_[backend];
  if (quiet) ++quiet_;  // until the lease ends (Release), or the wait fails
  if (back) ++rejoining_[only];
  // What held the lanes up while this request waited (LaneWaits): looked
  // at before each slice of waiting, which is then counted against it.
  auto holding = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::Duration* {
    if (use == LaneUse::kStart) return nullptr;
    bool timing = false, shared = false, window = false;
    for (size_t i = 0; i < lanes_.size(); ++i) {
      if (!may_use(i)) continue;
      timing = timing || exclusive_[i] || upgrading_[i];
      shared = shared || (!exclusive_[i] && holders_[i] > starts_[i]);
      window = window || HeldBack(i);
    }
    if (exclusive) {
      return timing ? &waits_.timing_behind_timing
                    : shared ? &waits_.timing_behind_verifications : &waits_.timing_behind_starts;
    }
    return timing || window ? &waits_.verification_behind_timing : &waits_.verification_behind_slots;
  };
  while (!usable() && (maybe_open(), !usable())) {
    absl::Status live = context.Check();
    if (live.ok() && clock->Now() >= give_up) {
      live = absl::DeadlineExceededError(
          absl::StrCat("no ", BackendName(backend), " lane became free within ",
                       absl::FormatDuration(clock->Now() - start)));
    }
    if (!live.ok()) {
      const size_t waited_in = target;
      stop_waiting();
      if (quiet) --quiet_;
      if (waited_in < lanes_.size()) MaybeCloseWindow(waited_in);
      return live;
    }
    absl::Duration* behind = holding();
    const absl::Time looked = options_.clock->MonotonicNow();
    mu_.AwaitWithTimeout(absl::Condition(&usable), kSlice);
    if (behind) *behind += options_.clock->MonotonicNow() - looked;
  }
  const size_t waited_in = target;
  stop_waiting();
  Taken t;
  t.lane = found;
  t.overlapped = holders_[found] > 0;
  if (t.overlapped) {
    ++overlaps_[found];
  } else {
    occupied_since_[found] = options_.clock->MonotonicNow();
  }
  ++holders_[found];
  if (use == LaneUse::kStart) ++starts_[found];
  exclusive_[found] = exclusive;
  // The window this measurement emptied: the one it waited in when that
  // covers the lane it took (host lanes share theirs), else the lane's own.
  const size_t emptied = waited_in < lanes_.size() && SharesWindows(found, waited_in) ? waited_in : found;
  if (exclusive && window_open_[emptied] && !window_emptied_[emptied]) {
    window_emptied_[emptied] = true;
    const absl::Duration emptying = options_.clock->MonotonicNow() - window_since_[emptied];
    waits_.window_emptying += emptying;
    waits_.longest_emptying = std::max(waits_.longest_emptying, emptying);
  }
  // Its window's lane emptied for nothing when another lane freed first.
  if (waited_in < lanes_.size() && waited_in != found) MaybeCloseWindow(waited_in);
  t.overlaps = overlaps_[found];
  return t;
}

void LanePool::OpenWindow(size_t lane) {
  window_open_[lane] = true;
  window_since_[lane] = options_.clock->MonotonicNow();
  window_emptied_[lane] = false;
  ++waits_.windows;
}

bool LanePool::SharesWindows(size_t a, size_t b) const {
  return a == b || (lanes_[a].backend == lanes_[b].backend && lanes_[a].backend != BackendKind::kCuda);
}

bool LanePool::HeldBack(size_t lane) const {
  if (quiet_ > 0) return true;
  for (size_t j = 0; j < lanes_.size(); ++j) {
    if (window_open_[j] && SharesWindows(lane, j)) return true;
  }
  return false;
}

bool LanePool::TimingWaiting(const Lane* lane) const {
  absl::MutexLock lock(&mu_);
  const size_t i = lane - lanes_.data();
  if (upgrading_[i] || quiet_ > 0) return true;
  for (size_t j = 0; j < lanes_.size(); ++j) {
    if (window_open_[j] && window_waiters_[j] > 0 && SharesWindows(i, j)) return true;
  }
  return false;
}

void LanePool::MaybeCloseWindow(size_t lane) {
  for (size_t j = 0; j < lanes_.size(); ++j) {
    if (!window_open_[j] || !SharesWindows(lane, j) || window_waiters_[j] > 0) continue;
    bool measuring = false;  // a measurement holds a lane this window covers
    for (size_t k = 0; k < lanes_.size(); ++k) measuring = measuring || (exclusive_[k] && SharesWindows(j, k));
    if (measuring) continue;
    window_open_[j] = false;
    waits_.windows_open += options_.clock->MonotonicNow() - window_since_[j];
  }
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
    absl::Duration& behind =
        holders_[i] - 1 > starts_[i] ? waits_.timing_behind_verifications : waits_.timing_behind_starts;
    const absl::Time looked = options_.clock->MonotonicNow();
    mu_.AwaitWithTimeout(absl::Condition(&alone), kSlice);
    behind += options_.clock->MonotonicNow() - looked;
  }
  upgrading_[i] = false;
  exclusive_[i] = true;
  return absl::OkStatus();
}

bool LanePool::OthersQuiet(size_t lane) const {
  for (size_t j = 0; j < lanes_.size(); ++j) {
    if (j != lane && holders_[j] > (exclusive_[j] ? 1 : 0)) return false;
  }
  return true;
}

void LanePool::Release(const Lane* lane, LaneUse use) {
  absl::Duration occupied;
  {
    absl::MutexLock lock(&mu_);
    const size_t i = lane - lanes_.data();
    exclusive_[i] = false;
    MaybeCloseWindow(i);
    if (use == LaneUse::kStart) --starts_[i];
    if (use == LaneUse::kQuiet) --quiet_;
    if (--holders_[i] > 0) return;
    occupied = options_.clock->MonotonicNow() - occupied_since_[i];
  }
  if (options_.on_idle) options_.on_idle(*lane, occupied);
}

}  // namespace crl
