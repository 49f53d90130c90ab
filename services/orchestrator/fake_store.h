// An in-memory StoreInterface for unit tests of the orchestrator: the same
// contract as the SQLite and PostgreSQL stores (tests/support/store_contract.h
// checks all three), no files. Several FakeStore objects over one
// FakeStore::Database see the same rows, as two store objects on one
// database file do (a resumed run, two orchestrator processes).
// `FailWrites` makes every later write fail with a given status, so a test
// can take the database away. Thread-safe.
#ifndef CRL_SERVICES_ORCHESTRATOR_FAKE_STORE_H_
#define CRL_SERVICES_ORCHESTRATOR_FAKE_STORE_H_

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "lib/hacks/hack_case.h"
#include "services/orchestrator/store.h"

namespace crl::orchestrator {

class FakeStore final : public StoreInterface {
 public:
  // The rows, shared by every FakeStore made over it.
  struct Database {
    absl::Mutex mu;
    std::map<std::string, v1::Run> runs ABSL_GUARDED_BY(mu);
    std::map<std::string, std::vector<v1::RunEvent>> events ABSL_GUARDED_BY(mu);
    // (run id, key) → variant, in key order per run.
    std::map<std::pair<std::string, std::string>, v1::Variant> variants ABSL_GUARDED_BY(mu);
    std::map<std::pair<std::string, std::string>, v1::StoredGroup> groups ABSL_GUARDED_BY(mu);
    std::map<std::string, v1::HackCase> hack_cases ABSL_GUARDED_BY(mu);
    absl::Status write_error ABSL_GUARDED_BY(mu);
  };

  FakeStore() : db_(std::make_shared<Database>()) {}
  explicit FakeStore(std::shared_ptr<Database> db) : db_(std::move(db)) {}
  std::shared_ptr<Database> database() const { return db_; }

  // Every write from now on fails with `status` (OK: writes work again).
  void FailWrites(absl::Status status) {
    absl::MutexLock l(&db_->mu);
    db_->write_error = std::move(status);
  }

  absl::StatusOr<v1::Run> CreateRun(const v1::Run& run, bool* created) override {
    absl::MutexLock l(&db_->mu);
    if (!run.idempotency_key().empty()) {
      for (const auto& [id, r] : db_->runs) {
        if (r.idempotency_key() == run.idempotency_key()) {
          *created = false;
          return r;
        }
      }
    }
    if (!db_->write_error.ok()) return db_->write_error;
    if (db_->runs.count(run.run_id())) {
      return absl::AlreadyExistsError(absl::StrCat("run_id: a run '", run.run_id(), "' exists"));
    }
    db_->runs[run.run_id()] = run;
    *created = true;
    return run;
  }

  absl::StatusOr<v1::Run> GetRun(const std::string& run_id) override {
    absl::MutexLock l(&db_->mu);
    auto it = db_->runs.find(run_id);
    if (it == db_->runs.end()) return NoRun(run_id);
    return it->second;
  }

  absl::Status PutRun(const v1::Run& run) override {
    absl::MutexLock l(&db_->mu);
    if (!db_->write_error.ok()) return db_->write_error;
    auto it = db_->runs.find(run.run_id());
    if (it == db_->runs.end()) return NoRun(run.run_id());
    it->second = run;
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<v1::Run>> ListRuns(v1::RunState state, int limit,
                                               const std::string& after_id) override {
    absl::MutexLock l(&db_->mu);
    std::vector<const v1::Run*> all;
    for (const auto& [id, r] : db_->runs) all.push_back(&r);
    // Newest first; ties on created_at broken by id (descending).
    auto newer = [](const v1::Run* a, const v1::Run* b) {
      return std::make_tuple(a->created_at(), a->run_id()) > std::make_tuple(b->created_at(), b->run_id());
    };
    std::sort(all.begin(), all.end(), newer);
    const v1::Run* after = nullptr;
    if (!after_id.empty()) {
      auto it = db_->runs.find(after_id);
      if (it == db_->runs.end()) return std::vector<v1::Run>{};
      after = &it->second;
    }
    std::vector<v1::Run> out;
    for (const v1::Run* r : all) {
      if (static_cast<int>(out.size()) >= limit) break;
      if (state != v1::RUN_STATE_UNSPECIFIED && r->state() != state) continue;
      if (after != nullptr && !newer(after, r)) continue;
      out.push_back(*r);
    }
    return out;
  }

  absl::StatusOr<v1::RunEvent> AppendEvent(v1::RunEvent event) override {
    absl::MutexLock l(&db_->mu);
    if (!db_->write_error.ok()) return db_->write_error;
    AppendLocked(&event);
    return event;
  }

  absl::StatusOr<std::vector<v1::RunEvent>> EventsAfter(const std::string& run_id, int64_t after_sequence,
                                                       int limit) override {
    absl::MutexLock l(&db_->mu);
    std::vector<v1::RunEvent> out;
    auto it = db_->events.find(run_id);
    if (it == db_->events.end()) return out;
    for (const v1::RunEvent& e : it->second) {
      if (static_cast<int>(out.size()) >= limit) break;
      if (e.sequence() > after_sequence) out.push_back(e);
    }
    return out;
  }

  absl::StatusOr<v1::RunEvent> RecordScored(const v1::Variant& variant, const v1::Run& run,
                                            v1::RunEvent event) override {
    absl::MutexLock l(&db_->mu);
    if (!db_->write_error.ok()) return db_->write_error;
    auto it = db_->runs.find(run.run_id());
    if (it == db_->runs.end()) return NoRun(run.run_id());
    db_->variants[{run.run_id(), variant.key()}] = variant;
    it->second = run;
    AppendLocked(&event);
    return event;
  }

  absl::Status PutVariant(const std::string& run_id, const v1::Variant& variant) override {
    return Put(&db_->variants, {run_id, variant.key()}, variant);
  }

  absl::StatusOr<std::optional<v1::Variant>> GetVariant(const std::string& run_id,
                                                       const std::string& key) override {
    return Find(db_->variants, {run_id, key});
  }

  absl::StatusOr<std::vector<v1::Variant>> Variants(const std::string& run_id,
                                                   const std::string& task_name) override {
    absl::MutexLock l(&db_->mu);
    std::vector<v1::Variant> out;
    for (auto it = db_->variants.lower_bound({run_id, ""}); it != db_->variants.end() && it->first.first == run_id;
         ++it) {
      if (task_name.empty() || it->second.task_name() == task_name) out.push_back(it->second);
    }
    return out;
  }

  absl::StatusOr<std::vector<v1::Variant>> GroupVariants(const std::string& run_id,
                                                        const std::string& group_id) override {
    absl::MutexLock l(&db_->mu);
    std::vector<v1::Variant> out;
    const std::string prefix = group_id + "/";
    for (auto it = db_->variants.lower_bound({run_id, prefix});
         it != db_->variants.end() && it->first.first == run_id && it->first.second.rfind(prefix, 0) == 0; ++it) {
      out.push_back(it->second);
    }
    return out;
  }

  absl::Status PutGroup(const std::string& run_id, const v1::StoredGroup& group) override {
    return Put(&db_->groups, {run_id, group.group_id()}, group);
  }

  absl::StatusOr<std::optional<v1::StoredGroup>> GetGroup(const std::string& run_id,
                                                         const std::string& group_id) override {
    return Find(db_->groups, {run_id, group_id});
  }

  absl::StatusOr<v1::HackCase> RecordHackCase(const v1::HackCase& seen) override {
    absl::MutexLock l(&db_->mu);
    if (!db_->write_error.ok()) return db_->write_error;
    auto it = db_->hack_cases.find(seen.case_id());
    v1::HackCase stored = it == db_->hack_cases.end() ? seen : hacks::MergeSighting(it->second, seen);
    db_->hack_cases[seen.case_id()] = stored;
    return stored;
  }

  absl::StatusOr<std::vector<v1::HackCase>> HackCases(const std::string& kind, const std::string& task_name,
                                                     int limit) override {
    absl::MutexLock l(&db_->mu);
    std::vector<v1::HackCase> out;
    for (const auto& [id, c] : db_->hack_cases) {
      if (hacks::Matches(c, kind, task_name)) out.push_back(c);
    }
    std::stable_sort(out.begin(), out.end(),
                     [](const auto& a, const auto& b) { return a.last_seen_at() > b.last_seen_at(); });
    if (limit >= 0 && static_cast<int>(out.size()) > limit) out.resize(limit);
    return out;
  }

  absl::StatusOr<std::optional<v1::HackCase>> GetHackCase(const std::string& case_id) override {
    absl::MutexLock l(&db_->mu);
    auto it = db_->hack_cases.find(case_id);
    if (it == db_->hack_cases.end()) return std::optional<v1::HackCase>();
    return std::optional<v1::HackCase>(it->second);
  }

 private:
  using RowKey = std::pair<std::string, std::string>;  // (run id, key)

  // Inserts or replaces a row, unless writes fail.
  template <typename T>
  absl::Status Put(std::map<RowKey, T>* rows, const RowKey& key, const T& value) {
    absl::MutexLock l(&db_->mu);
    if (!db_->write_error.ok()) return db_->write_error;
    (*rows)[key] = value;
    return absl::OkStatus();
  }
  template <typename T>
  std::optional<T> Find(const std::map<RowKey, T>& rows, const RowKey& key) {
    absl::MutexLock l(&db_->mu);
    auto it = rows.find(key);
    if (it == rows.end()) return std::nullopt;
    return it->second;
  }

  static absl::Status NoRun(const std::string& run_id) {
    return absl::NotFoundError(absl::StrCat("run_id: no run '", run_id, "'"));
  }
  void AppendLocked(v1::RunEvent* event) ABSL_EXCLUSIVE_LOCKS_REQUIRED(db_->mu) {
    std::vector<v1::RunEvent>& events = db_->events[event->run_id()];
    event->set_sequence(events.empty() ? 1 : events.back().sequence() + 1);
    events.push_back(*event);
  }

  std::shared_ptr<Database> db_;
};

}  // namespace crl::orchestrator

#endif  // CRL_SERVICES_ORCHESTRATOR_FAKE_STORE_H_
