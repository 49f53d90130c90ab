// Copies of one program within a group are evaluated and timed once.
//
// A group's completions often differ only in what surrounds the code (the
// analysis, the design notes) or not at all: after a few rounds most of a
// task's eight completions parse to one or two programs. Evaluating and
// timing each copy repeats the same request, and on a host lane that is
// most of a round. The first copy of a program is scored; the others wait
// for it and take its verdict, flags, evidence, speedup and interval (their
// rewards follow from those and the spec, as for any candidate), with a
// line in their log naming the copy that was measured.
//
// What counts as the same program is the task and the parsed candidate:
// its source, file name and backend, byte for byte (the spec is the run's
// or the request's, one for all). Nothing in a request to a worker or to crl-timing names the copy,
// so a program cannot behave differently for one of them: sharing changes
// only how many times its measurement's noise is drawn. An outcome without a
// verdict (an infrastructure failure, a cancelled run) is not shared: the
// next waiting copy is scored itself.
//
//   ProgramShare share;                        // one per group or request
//   auto joined = share.Join(key, context);    // on each scoring thread
//   if (!joined.ok()) ...                      // the context ended
//   if (joined->earlier) { TakeScoring(*joined->earlier, &v); ... }
//   else { ...score v...; joined->lead.Publish(v); }
#ifndef CRL_SERVICES_ORCHESTRATOR_PROGRAM_SHARE_H_
#define CRL_SERVICES_ORCHESTRATOR_PROGRAM_SHARE_H_

#include <map>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/context.h"
#include "crl/v1/orchestrator.pb.h"

namespace crl::orchestrator {

// Thread-safe.
class ProgramShare {
 public:
  // The right to score a program first. Publish hands the scored copy to
  // the others; destroyed without it (an error path, an infrastructure
  // failure), the next waiting copy leads instead.
  class Lead {
   public:
    Lead() = default;
    Lead(Lead&& other) noexcept : share_(other.share_), key_(std::move(other.key_)) { other.share_ = nullptr; }
    Lead& operator=(Lead&& other) noexcept;
    Lead(const Lead&) = delete;
    Lead& operator=(const Lead&) = delete;
    ~Lead() { Abandon(); }

    // `scored` is shared when it carries a verdict (it is not an
    // infrastructure failure); otherwise the same as abandoning.
    void Publish(const v1::Variant& scored);
    bool held() const { return share_ != nullptr; }

   private:
    friend class ProgramShare;
    Lead(ProgramShare* share, std::string key) : share_(share), key_(std::move(key)) {}
    void Abandon();
    ProgramShare* share_ = nullptr;
    std::string key_;
  };

  struct Joined {
    // Set: an earlier copy's scoring, to take (TakeScoring).
    std::optional<v1::Variant> earlier;
    // Held when `earlier` is not set: this copy is scored by the caller.
    Lead lead;
  };

  // The program's key: the task's name and the parsed candidate (source,
  // file name, backend).
  static std::string KeyOf(const std::string& task, const v1::Candidate& candidate);

  // Waits while another copy of `key` is being scored. An error when
  // `context` ends first (the caller leaves its copy unscored).
  absl::StatusOr<Joined> Join(const std::string& key, const RequestContext& context);

  // How many copies took an earlier copy's scoring.
  int shared() const;

 private:
  struct Entry {
    bool leading = false;                // a copy is being scored
    std::optional<v1::Variant> scored;   // its published outcome
  };
  void Finish(const std::string& key, const v1::Variant* scored);

  mutable absl::Mutex mu_;
  std::map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
  int shared_ ABSL_GUARDED_BY(mu_) = 0;
};

// Gives `copy` the outcome of `measured` (another copy of its program):
// verdict, flags and their evidence, speedup and interval, and the log,
// with a first line naming `measured`'s key. The reward is left to the
// caller (RewardOf), as for any scored candidate.
void TakeScoring(const v1::Variant& measured, v1::Variant* copy);

}  // namespace crl::orchestrator

#endif  // CRL_SERVICES_ORCHESTRATOR_PROGRAM_SHARE_H_
