#include "services/orchestrator/worker_pool.h"

#include <algorithm>
#include <utility>

namespace crl::orchestrator {

WorkerPool::WorkerPool(std::vector<PooledWorker> workers, int max_in_flight_per_lane, ClockInterface* clock,
                       absl::Duration cool_off)
    : max_in_flight_(std::max(1, max_in_flight_per_lane)), clock_(clock), cool_off_(cool_off) {
  for (auto& w : workers) slots_.push_back(Slot{std::move(w)});
}

void WorkerPool::SetWorkers(const std::vector<PooledWorker>& workers) {
  absl::MutexLock lock(&mu_);
  for (Slot& s : slots_) s.present = false;
  for (const PooledWorker& w : workers) {
    auto it = std::find_if(slots_.begin(), slots_.end(), [&](const Slot& s) { return s.worker.name == w.name; });
    if (it != slots_.end()) {
      it->present = true;
      it->worker.client = w.client;
    } else {
      slots_.push_back(Slot{w});
    }
  }
}

int WorkerPool::size() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(std::count_if(slots_.begin(), slots_.end(), [](const Slot& s) { return s.present; }));
}

int WorkerPool::PickLocked(const std::set<std::string>& avoid) {
  const absl::Time now = clock_->MonotonicNow();
  // Preference: not avoided and not cooling, then not avoided, then any.
  for (int pass = 0; pass < 3; ++pass) {
    int best = -1;
    for (size_t i = 0; i < slots_.size(); ++i) {
      const Slot& s = slots_[i];
      if (!s.present || s.in_flight >= max_in_flight_ * std::max(1, s.lanes)) continue;
      if (pass < 2 && avoid.count(s.worker.name)) continue;
      if (pass < 1 && s.cooling_until > now) continue;
      if (best < 0 || s.in_flight < slots_[best].in_flight) best = static_cast<int>(i);
    }
    if (best >= 0) return best;
    // A free worker exists only among the avoided or cooling: wait a little
    // for a preferred one first, unless every worker is avoided/cooling.
    bool preferred_busy = false;
    for (const Slot& s : slots_) {
      if (!s.present) continue;
      const bool ok = pass == 0 ? !avoid.count(s.worker.name) && s.cooling_until <= now
                                : !avoid.count(s.worker.name);
      preferred_busy = preferred_busy || ok;
    }
    if (preferred_busy) return -1;
  }
  return -1;
}

WorkerPool::Lease& WorkerPool::Lease::operator=(Lease&& other) noexcept {
  if (this != &other) {
    Release();
    pool_ = std::exchange(other.pool_, nullptr);
    index_ = std::exchange(other.index_, -1);
  }
  return *this;
}

void WorkerPool::Lease::Release() {
  if (pool_ != nullptr) pool_->ReleaseSlot(index_);
  pool_ = nullptr;
  index_ = -1;
}

void WorkerPool::ReleaseSlot(int index) {
  absl::MutexLock lock(&mu_);
  --slots_[index].in_flight;
}

absl::StatusOr<WorkerPool::Result> WorkerPool::Evaluate(const v1::EvaluateRequest& request,
                                                        const std::set<std::string>& avoid,
                                                        const RequestContext& context, Lease* keep) {
  if (keep != nullptr) keep->Release();
  int index = -1;
  PooledWorker worker;
  {
    absl::MutexLock lock(&mu_);
    if (slots_.empty()) return absl::FailedPreconditionError("workers: none configured");
    // No worker present (a headless Service with no ready pod): wait.
    while ((index = PickLocked(avoid)) < 0) {
      if (!context.Check().ok()) return context.Check();
      mu_.AwaitWithTimeout(absl::Condition(+[](int*) { return false; }, &index), absl::Milliseconds(20));
    }
    ++slots_[index].in_flight;
    worker = slots_[index].worker;
  }
  Result r{worker.client->Evaluate(request, context), worker.name};
  if (r.response.ok()) LearnLanes(index, context);
  if (keep != nullptr && r.response.ok()) {
    keep->pool_ = this;
    keep->index_ = index;
  } else {
    ReleaseSlot(index);
  }
  return r;
}

void WorkerPool::LearnLanes(int index, const RequestContext& context) {
  WorkerClientInterface* client = nullptr;
  {
    absl::MutexLock lock(&mu_);
    Slot& s = slots_[index];
    if (s.lanes > 0 || s.asking || clock_->MonotonicNow() < s.ask_after) return;
    s.asking = true;
    client = s.worker.client;
  }
  auto info = client->GetWorkerInfo(context);
  absl::MutexLock lock(&mu_);
  Slot& s = slots_[index];
  s.asking = false;
  if (info.ok()) {
    s.lanes = std::max(1, info->lanes_size());
  } else if (info.status().code() == absl::StatusCode::kUnimplemented) {
    s.lanes = 1;
  } else {
    s.ask_after = clock_->MonotonicNow() + cool_off_;
  }
}

int WorkerPool::capacity(const std::string& worker) const {
  absl::MutexLock lock(&mu_);
  for (const Slot& s : slots_) {
    if (s.worker.name == worker) return max_in_flight_ * std::max(1, s.lanes);
  }
  return 0;
}

void WorkerPool::ReportFailure(const std::string& worker) {
  absl::MutexLock lock(&mu_);
  for (Slot& s : slots_) {
    if (s.worker.name == worker) s.cooling_until = clock_->MonotonicNow() + cool_off_;
  }
}

int WorkerPool::in_flight() const {
  absl::MutexLock lock(&mu_);
  int n = 0;
  for (const Slot& s : slots_) n += s.in_flight;
  return n;
}

}  // namespace crl::orchestrator
