// Warm processes per lane: started and brought up (interpreter imported,
// device context created) before a request needs one, so a side's start-up
// is off the request's path. Each process is handed out once and never comes
// back: whatever a candidate leaves behind in its process (a monkeypatch, a
// global flag, a thread, a stream) dies with it, and the next candidate gets
// a process that has served nobody.
//
// A lane is filled only after its first Take() (a worker that never serves
// KernelBench starts no interpreter) and stays filled while it is used: idle
// processes older than max_idle are dropped and, if the lane has not been
// used within max_idle either, not replaced. Bringing a device up holds a
// lease on the lane, as verification does: shared on a GPU (it creates a
// context, which is GPU work, so it never overlaps a measurement), exclusive
// on a host lane (a host lane is one CPU; importing an interpreter there
// would disturb a measurement on it). Where the process type has a step that
// needs no device (Steps::prepare: a KernelBench harness importing torch), a
// GPU lane's processes take it before the lease, so the lease covers the
// context alone; a process prepared but not yet brought up is handed out
// when no warm one is left (its device comes up under its taker's lease).
// Templated over the process type so the decisions are unit-tested with
// fakes (tests/unit/warm_pool_test.cc); the worker's instances hold
// KernelBench harness sessions (kb_session.h) and native runners.
#ifndef CRL_SERVICES_WORKER_LANES_WARM_POOL_H_
#define CRL_SERVICES_WORKER_LANES_WARM_POOL_H_

#include <algorithm>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/backoff.h"
#include "common/clock.h"
#include "common/context.h"
#include "common/logging.h"
#include "services/worker/lanes/lanes.h"

namespace crl {

struct WarmPoolOptions {
  // Processes kept ready per lane (0: that kind of lane is never warmed).
  int per_gpu = 8;
  int per_host_lane = 2;
  // An idle process older than this is dropped; a lane unused for this long
  // is no longer refilled.
  absl::Duration max_idle = absl::Minutes(5);
  // After a process fails to start or warm, the lane waits this long (doubling
  // up to 16x while failures repeat) before trying again.
  absl::Duration retry_after_failure = absl::Seconds(30);
  // How long one filling attempt waits for its lane lease.
  absl::Duration lease_wait = absl::Seconds(1);
  ClockInterface* clock = RealClock::Get();
  // false: no filler threads; tests call FillLane() themselves.
  bool start_threads = true;
  // Told at every Take() whether it was served warm (for metrics).
  std::function<void(const Lane&, bool warm)> on_take;
};

// Thread-safe. P needs `bool Alive()`.
template <typename P>
class WarmPool {
 public:
  // Starts one process on a lane; null with *error set on failure. The
  // process is bound to `context` (the pool's: cancelled when the pool ends).
  using SpawnFn = std::function<std::unique_ptr<P>(const Lane&, const RequestContext&, std::string* error)>;
  // Brings a started process up; false with *error set on failure.
  using WarmFn = std::function<bool(P*, const Lane&, std::string* error)>;
  // Waits, with no lease, until a started process is ready for its device
  // (an interpreter imported); false with *error set on failure.
  using PrepareFn = std::function<bool(P*, std::string* error)>;

  struct Steps {
    SpawnFn spawn;
    // Optional; used on GPU lanes only (a host lane's process is its CPU's
    // work, started under the lease as before).
    PrepareFn prepare;
    // Optional: asks for the device without waiting; `warm` then awaits it.
    // Every process of a fill is begun before the first is awaited.
    WarmFn begin;
    WarmFn warm;
  };

  struct Stats {
    uint64_t warm = 0;      // Take() served from the pool
    uint64_t prepared = 0;  // of those, a process whose device was not up yet
    uint64_t cold = 0;      // Take() found nothing ready
    uint64_t started = 0;   // processes warmed
    uint64_t failed = 0;    // processes that failed to start or warm
    uint64_t dropped = 0;   // idle processes expired or found dead
    int idle = 0;           // ready now, all lanes (prepared ones included)
  };

  // `lanes` must outlive the pool.
  WarmPool(LanePool* lanes, Steps steps, WarmPoolOptions options)
      : lanes_(lanes), steps_(std::move(steps)), options_(std::move(options)), state_(lanes->lanes().size()) {
    if (!options_.start_threads) return;
    for (size_t i = 0; i < state_.size(); ++i) {
      if (Target(i) > 0) fillers_.emplace_back([this, i] { FillLoop(i); });
    }
  }
  WarmPool(LanePool* lanes, SpawnFn spawn, WarmFn warm, WarmPoolOptions options)
      : WarmPool(lanes, Steps{std::move(spawn), nullptr, nullptr, std::move(warm)}, std::move(options)) {}

  ~WarmPool() {
    // Idle processes are closed first, while the threads that started them
    // live: a sandboxed process dies with the thread that spawned it
    // (PR_SET_PDEATHSIG), and closing one that already died would write to
    // a dead pipe. A filler finishing a fill after this drops what it made.
    std::vector<LaneState> idle;
    {
      absl::MutexLock lock(&mu_);
      stopping_ = true;
      idle.swap(state_);
    }
    idle.clear();
    context_.Cancel();
    for (auto& t : fillers_) t.join();
  }

  // A ready process for `lane` (a lane of the LanePool), or null: the caller
  // starts one itself. Either way the lane is wanted from now on.
  std::unique_ptr<P> Take(const Lane& lane) {
    std::unique_ptr<P> out;
    {
      absl::MutexLock lock(&mu_);
      const size_t i = IndexOf(lane);
      if (i >= state_.size()) return nullptr;
      LaneState& s = state_[i];
      s.wanted_until = Now() + options_.max_idle;
      out = TakeAliveLocked(&s.idle);
      if (!out) {
        out = TakeAliveLocked(&s.prepared);
        if (out) ++stats_.prepared;
      }
      ++(out ? stats_.warm : stats_.cold);
    }
    if (options_.on_take) options_.on_take(lane, out != nullptr);
    return out;
  }

  // One filling step for lane `i`: drops expired or dead idle processes and,
  // if the lane is wanted and short, starts the missing processes (all at
  // once) and brings them up under the lane's lease. With a prepare step on
  // a GPU lane they start and prepare before the lease, and wait prepared
  // (Take() may have them) while the lease is busy. Returns how many it
  // brought up.
  int FillLane(size_t i) {
    const Lane& lane = lanes_->lanes()[i];
    const bool off_lane = steps_.prepare && lane.backend == BackendKind::kCuda;
    int missing;
    {
      absl::MutexLock lock(&mu_);
      missing = MissingLocked(i);
      if (missing <= 0 && state_[i].prepared.empty()) return 0;
    }
    std::string error;
    int failed = 0;
    int added = 0;
    std::vector<std::unique_ptr<P>> started;  // prepared, not yet handed over
    if (off_lane) {
      if (missing > 0) {
        started = Spawn(lane, missing, &failed, &error);
        // Awaited in the order started (all import at once), and each handed
        // over as soon as it is ready: a request that comes meanwhile takes
        // it (its device comes up under its taker's lease) instead of
        // starting a process of its own while the rest of the fill imports.
        for (auto& p : started) {
          if (!steps_.prepare(p.get(), &error)) {
            ++failed;
            p.reset();
            continue;
          }
          absl::MutexLock lock(&mu_);
          if (stopping_) break;  // the rest close below, on the thread that started them
          state_[i].prepared.push_back({std::move(p), Now()});
        }
      }
      added = BringUp(i, &failed, &error);
    } else if (missing > 0) {
      added = BringUp(i, &failed, &error, missing);
    }
    bool stopping;
    {
      absl::MutexLock lock(&mu_);
      stopping = stopping_;
      if (!stopping) {
        LaneState& s = state_[i];
        stats_.failed += failed;
        if (failed > 0) {
          const absl::Duration wait =
              Backoff::Nth(options_.retry_after_failure, options_.retry_after_failure * 16, s.failures++);
          s.retry_at = Now() + wait;
          CRL_LOG(WARNING) << "warm pool: " << lane.name << ": " << failed << " process(es) failed to start ("
                           << error.substr(0, 500) << "); next try in " << absl::FormatDuration(wait);
        } else {
          s.failures = 0;
        }
      }
    }
    if (stopping) {
      started.clear();  // the pool is ending: closed here, on the thread that started them
      return 0;
    }
    return added;
  }

  Stats stats() const {
    absl::MutexLock lock(&mu_);
    Stats out = stats_;
    out.idle = 0;
    for (const auto& s : state_) out.idle += static_cast<int>(s.idle.size() + s.prepared.size());
    return out;
  }

 private:
  struct Ready {
    std::unique_ptr<P> process;
    absl::Time since;
  };
  struct LaneState {
    std::deque<Ready> idle;      // brought up
    std::deque<Ready> prepared;  // started and prepared, device not up yet
    absl::Time wanted_until = absl::InfinitePast();
    absl::Time retry_at = absl::InfinitePast();
    int failures = 0;  // start failures in a row: the back-off's attempt
  };

  absl::Time Now() const { return options_.clock->MonotonicNow(); }

  // The first live process of `from`, dropping dead ones on the way.
  std::unique_ptr<P> TakeAliveLocked(std::deque<Ready>* from) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    while (!from->empty()) {
      Ready r = std::move(from->front());
      from->pop_front();
      if (r.process->Alive()) return std::move(r.process);
      ++stats_.dropped;
    }
    return nullptr;
  }

  // Starts up to `n` processes on `lane`, stopping at the first failure.
  std::vector<std::unique_ptr<P>> Spawn(const Lane& lane, int n, int* failed, std::string* error) {
    std::vector<std::unique_ptr<P>> out;
    for (int k = 0; k < n; ++k) {
      auto p = steps_.spawn(lane, context_, error);
      if (!p) {
        ++*failed;
        break;
      }
      out.push_back(std::move(p));
    }
    return out;
  }

  // Under lane i's lease (a start lease on a GPU): brings up the prepared
  // processes, or (spawn_n > 0) starts spawn_n and brings them up. Returns
  // how many came up; none when there was nothing to bring up or the lease
  // was busy (prepared ones stay).
  int BringUp(size_t i, int* failed, std::string* error, int spawn_n = 0) {
    if (spawn_n == 0) {
      absl::MutexLock lock(&mu_);
      if (stopping_ || state_[i].prepared.empty()) return 0;
    }
    const Lane& lane = lanes_->lanes()[i];
    // On a GPU a start lease (kStart): beside verifications, never during
    // timing, held back only while a timing window is open (lanes.h).
    auto lease = lanes_->AcquireLane(i, context_, options_.lease_wait,
                                     lane.backend == BackendKind::kCuda ? LaneUse::kStart : LaneUse::kExclusive);
    if (!lease.ok()) return 0;  // busy (timing, or a host lane in use): later
    std::vector<std::unique_ptr<P>> procs;
    if (spawn_n > 0) {
      procs = Spawn(lane, spawn_n, failed, error);
    } else {
      absl::MutexLock lock(&mu_);
      for (auto& r : state_[i].prepared) procs.push_back(std::move(r.process));
      state_[i].prepared.clear();
    }
    for (auto& p : procs) {
      if (p && steps_.begin && !steps_.begin(p.get(), lane, error)) {
        ++*failed;
        p.reset();
      }
    }
    // Awaited in the order started (all were asked at once), and each handed
    // to the lane as soon as it is up, so a burst of requests need not wait
    // for the whole batch.
    int added = 0;
    for (auto& p : procs) {
      if (!p) continue;
      if (!steps_.warm(p.get(), lane, error)) {
        ++*failed;
        continue;
      }
      absl::MutexLock lock(&mu_);
      if (stopping_) break;  // the pool is ending: the rest close here, on the thread that started them
      state_[i].idle.push_back({std::move(p), Now()});
      ++stats_.started;
      ++added;
    }
    return added;
  }

  int Target(size_t i) const {
    return lanes_->lanes()[i].backend == BackendKind::kCuda ? options_.per_gpu : options_.per_host_lane;
  }

  size_t IndexOf(const Lane& lane) const {
    const auto& all = lanes_->lanes();
    for (size_t i = 0; i < all.size(); ++i) {
      if (all[i].name == lane.name) return i;
    }
    return all.size();
  }

  // Drops expired and dead idle processes; how many the lane should start.
  int MissingLocked(size_t i) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (stopping_) return 0;  // state_ has been emptied
    LaneState& s = state_[i];
    const absl::Time now = Now();
    for (std::deque<Ready>* q : {&s.idle, &s.prepared}) {
      const size_t before = q->size();
      q->erase(std::remove_if(q->begin(), q->end(),
                              [&](Ready& r) { return now - r.since > options_.max_idle || !r.process->Alive(); }),
               q->end());
      stats_.dropped += before - q->size();
    }
    if (now > s.wanted_until || now < s.retry_at) return 0;
    return Target(i) - static_cast<int>(s.idle.size() + s.prepared.size());
  }

  void FillLoop(size_t i) {
    while (true) {
      {
        absl::MutexLock lock(&mu_);
        if (stopping_) return;
      }
      if (FillLane(i) > 0) continue;
      // Nothing to do now (or the lane was busy): look again shortly. Take()
      // does not signal: a request that found the pool empty has already
      // started its own process, and the next look is at most this far off.
      absl::MutexLock lock(&mu_);
      mu_.AwaitWithTimeout(absl::Condition(&stopping_), absl::Milliseconds(200));
    }
  }

  LanePool* const lanes_;
  const Steps steps_;
  const WarmPoolOptions options_;
  RequestContext context_;  // the pool's processes until taken; cancelled at the end
  mutable absl::Mutex mu_;
  std::vector<LaneState> state_ ABSL_GUARDED_BY(mu_);
  Stats stats_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> fillers_;
};

}  // namespace crl

#endif  // CRL_SERVICES_WORKER_LANES_WARM_POOL_H_
