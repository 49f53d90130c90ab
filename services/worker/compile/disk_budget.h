// Keeps a worker's content-addressed directories under a byte budget: the
// build cache's objects (cache_dir/objects/<id>) and the unpacked task
// bundles (work_dir/tasks/<id>, work_dir/kb-tasks/<id>). Entries are
// evicted least recently used first; an entry used within `keep_recent` is
// never evicted (a timing call reuses the artifact its evaluation built
// moments before), so the budget may be exceeded for a while rather than
// break work in flight. Evicted entries are rebuilt (or unpacked) on their
// next use: eviction costs time, never correctness. Thread-safe.
#ifndef CRL_SERVICES_WORKER_COMPILE_DISK_BUDGET_H_
#define CRL_SERVICES_WORKER_COMPILE_DISK_BUDGET_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"

namespace crl {

struct DiskBudgetOptions {
  // 0: no bound (entries are still measured and reported).
  int64_t max_bytes = 0;
  absl::Duration keep_recent = absl::Minutes(10);
};

class DiskBudget {
 public:
  // Told the bytes held and the entries evicted so far after every change.
  using Observer = std::function<void(int64_t bytes, int64_t evictions)>;

  // `roots`: directories whose subdirectories are the entries.
  DiskBudget(std::vector<std::string> roots, DiskBudgetOptions options, ClockInterface* clock);

  void SetObserver(Observer observer);
  // Measures every entry under the roots (at start; last use = mtime),
  // then evicts while over budget.
  void Scan();
  // `entry` was used now.
  void Touch(const std::string& entry);
  // `entry` was just written: measured, then evictions while over budget.
  void Added(const std::string& entry);

  int64_t bytes() const;
  int64_t evictions() const;

 private:
  struct Entry {
    int64_t bytes = 0;
    absl::Time last_use;
  };
  void EvictLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void NotifyLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::vector<std::string> roots_;
  const DiskBudgetOptions options_;
  ClockInterface* clock_;
  mutable absl::Mutex mu_;
  std::map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
  int64_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t evictions_ ABSL_GUARDED_BY(mu_) = 0;
  Observer observer_ ABSL_GUARDED_BY(mu_);
};

// Bytes of the regular files under `path` (0 when it does not exist).
int64_t DirectoryBytes(const std::string& path);

}  // namespace crl

#endif  // CRL_SERVICES_WORKER_COMPILE_DISK_BUDGET_H_
