#include "services/worker/compile/disk_budget.h"

#include <filesystem>

namespace crl {
namespace {

namespace fs = std::filesystem;

}  // namespace

int64_t DirectoryBytes(const std::string& path) {
  std::error_code ec;
  int64_t total = 0;
  for (auto it = fs::recursive_directory_iterator(path, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    std::error_code e2;
    if (it->is_regular_file(e2)) total += static_cast<int64_t>(it->file_size(e2));
  }
  return total;
}

DiskBudget::DiskBudget(std::vector<std::string> roots, DiskBudgetOptions options, ClockInterface* clock)
    : roots_(std::move(roots)), options_(options), clock_(clock) {}

void DiskBudget::SetObserver(Observer observer) {
  absl::MutexLock lock(&mu_);
  observer_ = std::move(observer);
  NotifyLocked();
}

void DiskBudget::Scan() {
  absl::MutexLock lock(&mu_);
  entries_.clear();
  bytes_ = 0;
  const absl::Time now = clock_->Now();
  for (const auto& root : roots_) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(root, ec)) {
      if (!e.is_directory()) continue;
      Entry entry;
      entry.bytes = DirectoryBytes(e.path().string());
      // The directory's mtime is its last use (Touch sets it), so LRU
      // survives a restart.
      std::error_code e2;
      const auto mtime = fs::last_write_time(e.path(), e2);
      entry.last_use = e2 ? now
                          : absl::FromUnixNanos(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                    mtime - fs::file_time_type::clock::now() +
                                                    std::chrono::system_clock::now().time_since_epoch())
                                                    .count());
      bytes_ += entry.bytes;
      entries_[e.path().string()] = entry;
    }
  }
  EvictLocked();
  NotifyLocked();
}

void DiskBudget::Touch(const std::string& entry) {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(entry);
  if (it == entries_.end()) return;
  it->second.last_use = clock_->Now();
  std::error_code ec;
  fs::last_write_time(entry, fs::file_time_type::clock::now(), ec);
}

void DiskBudget::Added(const std::string& entry) {
  const int64_t bytes = DirectoryBytes(entry);
  absl::MutexLock lock(&mu_);
  auto [it, fresh] = entries_.try_emplace(entry);
  if (!fresh) bytes_ -= it->second.bytes;
  it->second.bytes = bytes;
  it->second.last_use = clock_->Now();
  bytes_ += bytes;
  EvictLocked();
  NotifyLocked();
}

void DiskBudget::EvictLocked() {
  if (options_.max_bytes <= 0) return;
  const absl::Time now = clock_->Now();
  while (bytes_ > options_.max_bytes) {
    auto oldest = entries_.end();
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (now - it->second.last_use < options_.keep_recent) continue;
      if (oldest == entries_.end() || it->second.last_use < oldest->second.last_use) oldest = it;
    }
    if (oldest == entries_.end()) return;  // everything is in recent use
    std::error_code ec;
    fs::remove_all(oldest->first, ec);
    bytes_ -= oldest->second.bytes;
    ++evictions_;
    entries_.erase(oldest);
  }
}

void DiskBudget::NotifyLocked() {
  if (observer_) observer_(bytes_, evictions_);
}

int64_t DiskBudget::bytes() const {
  absl::MutexLock lock(&mu_);
  return bytes_;
}

int64_t DiskBudget::evictions() const {
  absl::MutexLock lock(&mu_);
  return evictions_;
}

}  // namespace crl
