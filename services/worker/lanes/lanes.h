// Execution lanes: one per GPU, or per configured CPU slot for the host
// backend. Measurement holds its lane exclusively, so nothing else runs on
// that GPU while it times. Verification (correctness trials: not timing-
// sensitive) may share a GPU lane with other verifications, up to
// LanePoolOptions::verify_slots_per_gpu at once; a host lane is one CPU and
// is never shared. An exclusive request waiting for a lane holds back new
// shared ones on that backend, so timing is not starved; a shared lease can
// become exclusive in place (LaneLease::Upgrade), or step aside and come
// back (LaneLease::StepAside, Rejoin: a verification between trials while
// timing waits; verified sides kept for their measurement). In-memory and
// deterministic: unit tests use the real pool.
#ifndef CRL_SERVICES_WORKER_LANES_LANES_H_
#define CRL_SERVICES_WORKER_LANES_LANES_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/context.h"
#include "services/worker/lanes/runner_client.h"

namespace crl {

class LanePool;

// kStart: shared, for the warm pool starting and warming harness processes
// (trusted code, no candidate's): beside verifications, never beside timing,
// and held back, as verifications are, only while a timing window is open
// (LanePoolOptions::timing_batch): not by every measurement that waits,
// which would leave the pool empty whenever the GPU is busy.
// kQuiet: as kExclusive, for a GPU measurement timed as launched (eager),
// whose host-side launches any other work on the machine slows: while it
// waits and while it holds its lane, every lane of the worker is held back
// (no new verification or start; the running ones are asked to step
// aside), and it takes its lane only once no other lane holds anything but
// measurements. A measurement replaying CUDA graphs barely uses the host and
// stays kExclusive: the worker's other GPUs go on verifying beside it.
enum class LaneUse { kExclusive, kShared, kStart, kQuiet };

struct LanePoolOptions {
  // Verifications at once on one GPU lane (>= 1; 1: every use exclusive).
  int verify_slots_per_gpu = 1;
  ClockInterface* clock = RealClock::Get();
  // Told, outside the pool's lock, each time a lane goes idle, with how long
  // it was occupied by one lease or several overlapping ones (the lane's
  // busy time, for its busy fraction). May be empty.
  std::function<void(const Lane&, absl::Duration occupied)> on_idle;
  // Timing windows on GPU lanes. Timing waiting for a GPU lane holds back
  // new verifications, warm-pool starts, and verifications coming back from
  // stepping aside (and makes the running ones step aside: TimingWaiting)
  // only once a window opens: when `timing_batch` measurements wait on the
  // backend, or one has waited `timing_delay`. Until then verifications go
  // on; once open, every measurement waiting, and every one that comes
  // meanwhile, takes a lane in turn, and the window closes when none waits
  // in it or holds its lane. A window is one lane's (the one its
  // measurement would empty soonest): the host's other GPUs go on
  // verifying, as separate workers would. Host lanes, CPUs of one machine
  // whose work disturbs each other's timing, are all held back by any
  // host lane's window. Emptying the lane of verifications (each runs to its next call)
  // then happens once per window, not once per measurement. A lane with no
  // holder is taken at once. 1 and zero: a window opens at the first wait.
  int timing_batch = 1;
  absl::Duration timing_delay = absl::ZeroDuration();
};

// Holds a lane until destroyed. Movable.
class LaneLease {
 public:
  LaneLease(LanePool* pool, const Lane* lane, bool overlapped_at_start, uint64_t overlaps_at_start,
            LaneUse use = LaneUse::kExclusive)
      : pool_(pool),
        lane_(lane),
        overlapped_(overlapped_at_start),
        overlaps_at_start_(overlaps_at_start),
        use_(use) {}
  LaneLease(LaneLease&& other) noexcept
      : pool_(other.pool_),
        lane_(other.lane_),
        overlapped_(other.overlapped_),
        overlaps_at_start_(other.overlaps_at_start_),
        use_(other.use_),
        aside_(other.aside_) {
    other.pool_ = nullptr;
  }
  LaneLease& operator=(LaneLease&&) = delete;
  ~LaneLease();
  const Lane& lane() const { return *lane_; }
  // Takes the lane alone without letting go of it: waits (as Acquire, at
  // most `max_wait`) until every other lease on the lane has ended, holding
  // back new shared ones on this lane meanwhile. FAILED_PRECONDITION at
  // once when another lease on the lane is already doing so (both waiting
  // for the other would never end: the caller lets go instead). On any
  // error the lease is still held, shared. A lease already alone is
  // upgraded at once.
  absl::Status Upgrade(const RequestContext& context, absl::Duration max_wait);
  // Another lease on this lane is upgrading (Upgrade) now.
  bool UpgradePending() const;
  // A request waits to hold this lease's lane alone (timing: an upgrade on
  // it, or a window open on it), and this lease holds it up while it stays.
  bool TimingWaiting() const;
  // Lets go of the lane without ending the lease: the lane stops counting
  // it (timing may take it alone, a verification its slot) until Rejoin.
  // For sides that stay alive but idle (and frozen) meanwhile: a
  // verification between two trials while timing waits, verified sides
  // waiting for their measurement.
  void StepAside();
  bool aside() const { return aside_; }
  // Takes the same lane again after StepAside, waiting at most `max_wait`
  // (and the request's deadline). kShared: as a new verification would
  // (after every timing waiting on the backend) but before new ones;
  // kExclusive: alone, as timing. On error the lease stays aside.
  absl::Status Rejoin(LaneUse use, const RequestContext& context, absl::Duration max_wait);
  // Whether another lease has held the lane at some moment while this one
  // did (only shared leases can overlap): a failure that contention could
  // cause (a timeout, running out of device memory) is then not yet known
  // to be the candidate's.
  bool SharedWithOthers() const;

 private:
  LanePool* pool_;
  const Lane* lane_;
  bool overlapped_;
  uint64_t overlaps_at_start_;
  LaneUse use_;  // as taken (kStart and kQuiet are counted apart)
  bool aside_ = false;
};

// Where requests waited for lanes, summed (LanePool::Waits): what held the
// lane, looked at each time a waiter woke (at least every 100 ms).
struct LaneWaits {
  // Timing (exclusive) behind verifications, behind warm-pool starts only,
  // behind other timing.
  absl::Duration timing_behind_verifications, timing_behind_starts, timing_behind_timing;
  // Verifications behind timing (held, waiting or upgrading), behind full
  // slots; those coming back from stepping aside included.
  absl::Duration verification_behind_timing, verification_behind_slots;
  // Timing windows opened; how long they stayed open, summed; how much of
  // that went to emptying the GPU (from a window's opening to the first
  // measurement holding a lane alone: the verifications on it running to
  // their next call), summed, and the longest.
  int windows = 0;
  absl::Duration windows_open, window_emptying, longest_emptying;
  // One line, for a log.
  std::string Describe() const;
};

// Thread-safe.
class LanePool {
 public:
  explicit LanePool(std::vector<Lane> lanes, LanePoolOptions options = {});
  LaneWaits Waits() const;
  // Waits for a lane of `backend` usable as `use` until the request's
  // deadline, at most `max_wait` (the bound for requests without a
  // deadline). A shared request takes the least-held lane. UNAVAILABLE when
  // the worker has no such lane; CANCELLED when the request is cancelled
  // while waiting; DEADLINE_EXCEEDED when no lane freed in time.
  absl::StatusOr<LaneLease> Acquire(BackendKind backend, const RequestContext& context,
                                    absl::Duration max_wait, LaneUse use = LaneUse::kExclusive);
  // As Acquire, for the lane lanes()[index] only (a warm pool filling that
  // lane); not counted in Waiting().
  absl::StatusOr<LaneLease> AcquireLane(size_t index, const RequestContext& context,
                                        absl::Duration max_wait, LaneUse use);
  // The lane of `backend` a shared request would take now: the least held,
  // ties taken in turn (so that requests readying their processes for a
  // lane at once spread over the lanes); lanes().size() when there is none.
  // For a request that readies its processes on a lane before waiting for
  // it (AcquireOn).
  size_t LeastHeld(BackendKind backend) const;
  // As Acquire, on lanes()[index] only; counted in Waiting().
  absl::StatusOr<LaneLease> AcquireOn(size_t index, const RequestContext& context, absl::Duration max_wait,
                                      LaneUse use);
  const std::vector<Lane>& lanes() const { return lanes_; }
  bool Has(BackendKind backend) const;
  // Lanes held now (by one lease or more), and requests waiting for one.
  int Busy() const;
  int Waiting() const;

 private:
  friend class LaneLease;
  void Release(const Lane* lane, LaneUse use);
  absl::Status Upgrade(const Lane* lane, const RequestContext& context, absl::Duration max_wait);
  bool Upgrading(const Lane* lane) const;
  bool TimingWaiting(const Lane* lane) const;
  // What Take() found: the lane, and whether another lease held it then.
  struct Taken {
    size_t lane = 0;
    bool overlapped = false;
    uint64_t overlaps = 0;
  };
  // Waits for a lane of `backend` (lanes_[only] alone when `only` is a
  // lane's index) usable as `use`, and takes it. `counted`: the wait shows
  // in Waiting(); `rejoin`: a lease back from StepAside, ahead of new
  // shared ones.
  absl::StatusOr<Taken> Take(BackendKind backend, size_t only, bool counted, bool rejoin, LaneUse use,
                             const RequestContext& context, absl::Duration max_wait);
  int Capacity(size_t lane) const;
  uint64_t Overlaps(const Lane* lane) const;

  const std::vector<Lane> lanes_;
  const LanePoolOptions options_;
  mutable absl::Mutex mu_;
  std::vector<int> holders_ ABSL_GUARDED_BY(mu_);
  std::vector<bool> exclusive_ ABSL_GUARDED_BY(mu_);
  // Per lane: a lease on it is waiting to hold it alone (Upgrade).
  std::vector<bool> upgrading_ ABSL_GUARDED_BY(mu_);
  std::vector<absl::Time> occupied_since_ ABSL_GUARDED_BY(mu_);
  // Per lane: acquisitions made while it was already held.
  std::vector<uint64_t> overlaps_ ABSL_GUARDED_BY(mu_);
  // Per lane: shared leases waiting to come back from StepAside.
  std::vector<int> rejoining_ ABSL_GUARDED_BY(mu_);
  // Per lane: holders that are warm-pool starts (LaneUse::kStart).
  std::vector<int> starts_ ABSL_GUARDED_BY(mu_);
  LaneWaits waits_ ABSL_GUARDED_BY(mu_);
  std::map<BackendKind, int> exclusive_waiting_ ABSL_GUARDED_BY(mu_);
  // Per lane: a timing window is open (LanePoolOptions::timing_batch), the
  // measurements waiting in it, when it opened, and whether a measurement
  // has held the lane alone since (LaneWaits::window_emptying).
  std::vector<bool> window_open_ ABSL_GUARDED_BY(mu_);
  std::vector<int> window_waiters_ ABSL_GUARDED_BY(mu_);
  std::vector<absl::Time> window_since_ ABSL_GUARDED_BY(mu_);
  std::vector<bool> window_emptied_ ABSL_GUARDED_BY(mu_);
  void OpenWindow(size_t lane) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether a window on lane `b` holds lane `a` back too: a GPU lane's
  // window is its own; host lanes (CPUs of one machine, whose work disturbs
  // each other's timing) share theirs.
  bool SharesWindows(size_t a, size_t b) const;
  // A window holds `lane` back (SharesWindows).
  bool HeldBack(size_t lane) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Closes the windows that hold `lane` back (SharesWindows) once no
  // measurement waits in them or holds a lane they cover.
  void MaybeCloseWindow(size_t lane) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  int waiting_ ABSL_GUARDED_BY(mu_) = 0;
  // kQuiet measurements waiting or holding a lane: every lane is held back.
  int quiet_ ABSL_GUARDED_BY(mu_) = 0;
  // Every lane but `lane` holds nothing but measurements (kQuiet may start).
  bool OthersQuiet(size_t lane) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // LeastHeld's turn among tied lanes.
  mutable uint64_t turn_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace crl

#endif  // CRL_SERVICES_WORKER_LANES_LANES_H_
