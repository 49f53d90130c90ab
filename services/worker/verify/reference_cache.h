// Reference outputs of correctness trials, kept in the worker's memory so
// that later verifications of the same task on the same lane run only the
// candidate's process (docs/worker.md, "Reference outputs").
//
// A verification that misses records what the reference returned for every
// trial of its plan, with the secret seeds the plan drew. The next
// verification of that task on that lane replays the seeds, so its plan is
// the same, and its reference side is a CachedReferenceSession answering
// from the record: one process start and one side's GPU work fewer. Nothing
// of the record ever reaches a candidate process; the cache lives in the
// worker and dies with it (the worker's torch and GPU are fixed for its
// life, so the key needs only the task's content, the lane, the reference
// artifact and the trial count).
//
// Seeds that never change are a weaker secret than fresh ones: a record is
// used at most `max_uses` times and for at most `max_age`, then drawn
// afresh. A record larger than half the byte budget is not kept.
#ifndef CRL_SERVICES_WORKER_VERIFY_REFERENCE_CACHE_H_
#define CRL_SERVICES_WORKER_VERIFY_REFERENCE_CACHE_H_

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "services/worker/formats/task_format.h"

namespace crl {

struct ReferenceCacheOptions {
  // Bytes of recorded outputs (and probes) held at once; 0 turns the cache
  // off. The least recently used record goes first. The worker's default
  // is sized to its memory (ReferenceCacheBytesFor).
  int64_t max_bytes = int64_t{4} << 30;
  // Verifications one record serves before its seeds are drawn afresh.
  int max_uses = 256;
  // Age after which a record is drawn afresh.
  absl::Duration max_age = absl::Hours(1);
};

// The cache's budget on a worker that may use `usable_memory` bytes (0:
// unknown): an eighth of it, at least 1 GiB; 4 GiB when unknown. One round
// of an RL run's tasks with large outputs holds several GiB of answers (40
// CUDA-L1 rows: about 4.5 GiB), which a fixed 4 GiB evicted just before the
// next round asked for them.
int64_t ReferenceCacheBytesFor(int64_t usable_memory);

// What the reference returned for every trial of one plan. Immutable once
// complete; shared by the verifications that replay it.
struct ReferenceRecord {
  // The seeds the plan drew, in the order it drew them.
  std::vector<uint64_t> seeds;
  // The reference's answer to each trial, by TrialRequest::index, with the
  // seed and distribution it was asked for.
  struct Trial {
    uint64_t seed = 0;
    bool alternative = false;
    TrialResult result;
  };
  std::map<int, Trial> trials;
  // The trials carry degenerate-task probes where eligible.
  bool probes = false;
  int64_t bytes = 0;
};

// Thread-safe.
class ReferenceCache {
 public:
  struct Stats {
    uint64_t hits = 0;
    uint64_t misses = 0;
    uint64_t inserted = 0;
    uint64_t too_large = 0;  // complete records not kept for their size
    uint64_t retired = 0;    // records past max_uses or max_age
    uint64_t evicted = 0;    // records dropped for room
    int64_t bytes = 0;       // held now
    int entries = 0;
  };

  // `clock` must outlive the cache.
  ReferenceCache(ReferenceCacheOptions options, ClockInterface* clock);

  bool enabled() const { return options_.max_bytes > 0; }
  // The largest record kept: half the budget (a larger one would empty it).
  int64_t max_record_bytes() const { return options_.max_bytes / 2; }

  // The record for `key`, counted as one use; null on a miss (none, retired,
  // or without probes when `need_probes`).
  std::shared_ptr<const ReferenceRecord> Lookup(const std::string& key, bool need_probes);
  // Whether Lookup would find `key` now, without counting a use or a
  // look-up (a request deciding which processes to ready before its lane).
  bool Holds(const std::string& key, bool need_probes) const;
  // Keeps a complete record (replacing one under the same key), evicting
  // the least recently used ones for room. False when it was not kept.
  bool Insert(const std::string& key, std::shared_ptr<const ReferenceRecord> record);

  Stats stats() const;

  // The key of a verification: task content, lane, reference artifact and
  // the trials requested (the plan depends on nothing else but the seeds).
  static std::string Key(const std::string& content_id, const std::string& lane,
                         const std::string& reference_artifact, int trials);

 private:
  struct Entry {
    std::shared_ptr<const ReferenceRecord> record;
    absl::Time born;
    int uses = 0;
    std::list<std::string>::iterator lru;  // position in lru_
  };
  void EraseLocked(std::map<std::string, Entry>::iterator it) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Used as often as it may be, or too old: retired at its next look-up.
  bool Expired(const Entry& e) const;

  const ReferenceCacheOptions options_;
  ClockInterface* clock_;
  mutable absl::Mutex mu_;
  std::map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
  std::list<std::string> lru_ ABSL_GUARDED_BY(mu_);  // front: most recently used
  Stats stats_ ABSL_GUARDED_BY(mu_);
};

// The bytes a trial result holds (outputs and probes).
int64_t TrialResultBytes(const TrialResult& result);

// Wraps the reference side of a verification that missed: passes every call
// through and records each trial's answer (the caller checks Complete()).
// Past `max_bytes` it stops copying answers: such a record is never kept.
class RecordingReferenceSession final : public SessionInterface {
 public:
  // `inner` must outlive this session.
  RecordingReferenceSession(SessionInterface* inner, int64_t max_bytes);
  // A seed source that draws from `seeds` and records what it drew.
  SeedSource RecordSeeds(SeedSource seeds);
  // The record, when every trial of `plan_size` was answered; null otherwise.
  std::shared_ptr<const ReferenceRecord> Complete(size_t plan_size, bool probes);

  RunnerEvent Trial(const TrialRequest& request, double timeout_seconds, TrialResult* result) override;
  RunnerEvent Timed(const TimedRequest& request, double timeout_seconds, TimedResult* result) override {
    return inner_->Timed(request, timeout_seconds, result);
  }
  RunnerEvent LastOutputs(double timeout_seconds, int call, const OutputSample& sample,
                          std::vector<OutputTensor>* outputs) override {
    return inner_->LastOutputs(timeout_seconds, call, sample, outputs);
  }
  std::string device_name() const override { return inner_->device_name(); }
  bool custom_kernel() const override { return inner_->custom_kernel(); }
  std::vector<std::string> global_flags() const override { return inner_->global_flags(); }
  bool dead() const override { return inner_->dead(); }
  void Close() override { inner_->Close(); }

 private:
  SessionInterface* inner_;
  const int64_t max_bytes_;
  std::shared_ptr<ReferenceRecord> record_;
  // A trial failed, or the answers outgrew max_bytes: nothing to keep.
  bool failed_ = false;
};

// The reference side of a verification that hit: answers trials from a
// record. It runs nothing, so it cannot be timed; a trial the record lacks
// (a plan that differs from the recorded one) is INFRA_ERROR.
class CachedReferenceSession final : public SessionInterface {
 public:
  explicit CachedReferenceSession(std::shared_ptr<const ReferenceRecord> record);
  // Replays the record's seeds in order (the plan then equals the recorded
  // one); past the end it draws from `fallback`.
  SeedSource ReplaySeeds(SeedSource fallback) const;

  RunnerEvent Trial(const TrialRequest& request, double timeout_seconds, TrialResult* result) override;
  RunnerEvent Timed(const TimedRequest&, double, TimedResult*) override { return NotAProcess(); }
  RunnerEvent LastOutputs(double, int, const OutputSample&, std::vector<OutputTensor>*) override {
    return NotAProcess();
  }
  std::string device_name() const override { return ""; }
  bool custom_kernel() const override { return true; }
  std::vector<std::string> global_flags() const override { return {}; }
  bool dead() const override { return false; }
  void Close() override {}

 private:
  static RunnerEvent NotAProcess();
  std::shared_ptr<const ReferenceRecord> record_;
};

}  // namespace crl

#endif  // CRL_SERVICES_WORKER_VERIFY_REFERENCE_CACHE_H_
