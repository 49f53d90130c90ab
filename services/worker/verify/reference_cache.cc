#include "services/worker/verify/reference_cache.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace crl {

int64_t ReferenceCacheBytesFor(int64_t usable_memory) {
  constexpr int64_t kGiB = int64_t{1} << 30;
  if (usable_memory <= 0) return 4 * kGiB;
  return std::max(kGiB, usable_memory / 8);
}

ReferenceCache::ReferenceCache(ReferenceCacheOptions options, ClockInterface* clock)
    : options_(std::move(options)), clock_(clock) {}

std::string ReferenceCache::Key(const std::string& content_id, const std::string& lane,
                                const std::string& reference_artifact, int trials) {
  // Lengths first: no two different tuples make the same key.
  return absl::StrCat(content_id.size(), ":", content_id, "|", lane.size(), ":", lane, "|",
                      reference_artifact.size(), ":", reference_artifact, "|", trials);
}

void ReferenceCache::EraseLocked(std::map<std::string, Entry>::iterator it) {
  stats_.bytes -= it->second.record->bytes;
  lru_.erase(it->second.lru);
  entries_.erase(it);
}

std::shared_ptr<const ReferenceRecord> ReferenceCache::Lookup(const std::string& key, bool need_probes) {
  absl::MutexLock lock(&mu_);
  if (!enabled()) return nullptr;
  auto it = entries_.find(key);
  if (it != entries_.end()) {
    Entry& e = it->second;
    if (Expired(e)) {
      ++stats_.retired;
      EraseLocked(it);
    } else if (!need_probes || e.record->probes) {
      ++e.uses;
      lru_.splice(lru_.begin(), lru_, e.lru);
      ++stats_.hits;
      return e.record;
    }
  }
  ++stats_.misses;
  return nullptr;
}

bool ReferenceCache::Holds(const std::string& key, bool need_probes) const {
  absl::MutexLock lock(&mu_);
  if (!enabled()) return false;
  auto it = entries_.find(key);
  if (it == entries_.end()) return false;
  return !Expired(it->second) && (!need_probes || it->second.record->probes);
}

bool ReferenceCache::Expired(const Entry& e) const {
  return e.uses >= options_.max_uses || clock_->MonotonicNow() - e.born >= options_.max_age;
}

bool ReferenceCache::Insert(const std::string& key, std::shared_ptr<const ReferenceRecord> record) {
  absl::MutexLock lock(&mu_);
  if (!enabled() || !record) return false;
  if (record->bytes > max_record_bytes()) {
    ++stats_.too_large;
    return false;
  }
  if (auto it = entries_.find(key); it != entries_.end()) EraseLocked(it);
  while (stats_.bytes + record->bytes > options_.max_bytes && !lru_.empty()) {
    ++stats_.evicted;
    EraseLocked(entries_.find(lru_.back()));
  }
  lru_.push_front(key);
  Entry& e = entries_[key];
  e.born = clock_->MonotonicNow();
  e.lru = lru_.begin();
  stats_.bytes += record->bytes;
  e.record = std::move(record);
  ++stats_.inserted;
  return true;
}

ReferenceCache::Stats ReferenceCache::stats() const {
  absl::MutexLock lock(&mu_);
  Stats s = stats_;
  s.entries = static_cast<int>(entries_.size());
  return s;
}

int64_t TrialResultBytes(const TrialResult& result) {
  int64_t bytes = 0;
  for (const auto& o : result.outputs) bytes += static_cast<int64_t>(o.data.size());
  for (const auto& [name, o] : result.probes) bytes += static_cast<int64_t>(o.data.size());
  return bytes;
}

RecordingReferenceSession::RecordingReferenceSession(SessionInterface* inner, int64_t max_bytes)
    : inner_(inner), max_bytes_(max_bytes), record_(std::make_shared<ReferenceRecord>()) {}

SeedSource RecordingReferenceSession::RecordSeeds(SeedSource seeds) {
  return [record = record_, seeds = std::move(seeds)] {
    const uint64_t s = seeds();
    record->seeds.push_back(s);
    return s;
  };
}

RunnerEvent RecordingReferenceSession::Trial(const TrialRequest& request, double timeout_seconds,
                                             TrialResult* result) {
  RunnerEvent event = inner_->Trial(request, timeout_seconds, result);
  failed_ = failed_ || !event.ok;
  if (failed_ || request.rerun || record_->trials.count(request.index)) return event;
  record_->bytes += TrialResultBytes(*result);
  if (record_->bytes > max_bytes_) {
    // Too large to keep: no more copies of answers that would be dropped.
    failed_ = true;
    record_->trials.clear();
    return event;
  }
  record_->trials[request.index] = {request.seed, request.alternative, *result};
  return event;
}

std::shared_ptr<const ReferenceRecord> RecordingReferenceSession::Complete(size_t plan_size, bool probes) {
  if (failed_ || record_->trials.size() != plan_size || plan_size == 0) return nullptr;
  record_->probes = probes;
  return record_;
}

CachedReferenceSession::CachedReferenceSession(std::shared_ptr<const ReferenceRecord> record)
    : record_(std::move(record)) {}

SeedSource CachedReferenceSession::ReplaySeeds(SeedSource fallback) const {
  auto next = std::make_shared<size_t>(0);
  return [record = record_, next, fallback = std::move(fallback)] {
    return *next < record->seeds.size() ? record->seeds[(*next)++] : fallback();
  };
}

RunnerEvent CachedReferenceSession::Trial(const TrialRequest& request, double, TrialResult* result) {
  auto it = record_->trials.find(request.index);
  if (it == record_->trials.end() || request.rerun || it->second.seed != request.seed ||
      it->second.alternative != request.alternative) {
    return {false, v1::VERDICT_INFRA_ERROR,
            absl::StrCat("reference cache: no recorded answer for ", request.label)};
  }
  *result = it->second.result;
  if (!request.probes) result->probes.clear();
  return {true, v1::VERDICT_OK, ""};
}

RunnerEvent CachedReferenceSession::NotAProcess() {
  return {false, v1::VERDICT_INFRA_ERROR, "reference cache: a recorded reference cannot be timed"};
}

}  // namespace crl
