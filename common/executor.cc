#include "common/executor.h"

#include <pthread.h>

#include <utility>

#include "absl/strings/str_cat.h"

namespace crl {

BoundedExecutor::BoundedExecutor(ExecutorOptions options) : options_(std::move(options)) {
  int n = options_.threads < 1 ? 1 : options_.threads;
  absl::MutexLock join_lock(&join_mu_);
  threads_.reserve(n);
  for (int i = 0; i < n; ++i) {
    threads_.emplace_back([this] { WorkerLoop(); });
    std::string name = absl::StrCat(options_.name.substr(0, 10), "-", i);
    pthread_setname_np(threads_.back().native_handle(), name.c_str());
  }
}

BoundedExecutor::~BoundedExecutor() { Shutdown(); }

absl::Status BoundedExecutor::Submit(std::function<void()> task) {
  absl::MutexLock lock(&mu_);
  if (stopping_) {
    return absl::UnavailableError(absl::StrCat(options_.name, ": shutting down"));
  }
  // Capacity = idle threads + queue slots.
  int waiting = static_cast<int>(queue_.size());
  if (waiting >= idle_ + options_.max_queue) {
    return absl::ResourceExhaustedError(absl::StrCat(
        options_.name, ": queue full (", waiting, " waiting, ", busy_, " running)"));
  }
  queue_.push_back(std::move(task));
  return absl::OkStatus();
}

void BoundedExecutor::WorkerLoop() {
  for (;;) {
    std::function<void()> task;
    {
      absl::MutexLock lock(&mu_);
      ++idle_;
      mu_.Await(absl::Condition(
          +[](BoundedExecutor* self) ABSL_EXCLUSIVE_LOCKS_REQUIRED(self->mu_) {
            return self->stopping_ || !self->queue_.empty();
          },
          this));
      --idle_;
      if (queue_.empty()) return;  // stopping and drained
      task = std::move(queue_.front());
      queue_.pop_front();
      ++busy_;
    }
    task();
    absl::MutexLock lock(&mu_);
    --busy_;
  }
}

void BoundedExecutor::Shutdown() {
  absl::MutexLock join_lock(&join_mu_);
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

int BoundedExecutor::QueueDepth() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(queue_.size());
}

int BoundedExecutor::Busy() const {
  absl::MutexLock lock(&mu_);
  return busy_;
}

}  // namespace crl
