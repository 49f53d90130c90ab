// The deadline and cancellation of one request, carried from the edge (a gRPC
// call, a CLI command) into every step that waits or runs long: compiles,
// lane waits, runner calls, measuring loops, outgoing calls. A step that sees
// Check() fail stops and returns that status; it never turns it into a
// verdict about a candidate.
//
//   RequestContext ctx(clock, clock->Now() + absl::Minutes(1));
//   CRL_RETURN_IF_ERROR(ctx.Check());   // before expensive work
//   ...
//   ctx.Cancel();                       // from any thread
#ifndef CRL_COMMON_CONTEXT_H_
#define CRL_COMMON_CONTEXT_H_

#include <atomic>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/clock.h"

namespace crl {

// Thread-safe. Not copyable: pass it by reference down the call.
class RequestContext {
 public:
  // No deadline; cancelled only by Cancel(). The real clock.
  RequestContext();
  // Expires at `deadline` on `clock` (absl::InfiniteFuture(): never).
  // `is_cancelled`, when set, is polled as well (for example
  // grpc::CallbackServerContext::IsCancelled); it must be thread-safe.
  RequestContext(ClockInterface* clock, absl::Time deadline,
                 std::function<bool()> is_cancelled = nullptr);
  RequestContext(const RequestContext&) = delete;
  RequestContext& operator=(const RequestContext&) = delete;

  // A context for work nobody waits on (tests, start-up). Never expires.
  static const RequestContext& Background();

  // Cancels the request: every wait and loop that checks it ends.
  void Cancel() { cancelled_.store(true); }
  bool IsCancelled() const;
  bool Expired() const;
  absl::Time deadline() const { return deadline_; }
  // Time left before the deadline: InfiniteDuration() without one, never
  // negative.
  absl::Duration Remaining() const;
  // OK while the request is live; CANCELLED or DEADLINE_EXCEEDED otherwise.
  absl::Status Check() const;
  ClockInterface* clock() const { return clock_; }

 private:
  ClockInterface* const clock_;
  const absl::Time deadline_;
  const std::function<bool()> is_cancelled_;
  std::atomic<bool> cancelled_{false};
};

}  // namespace crl

#endif  // CRL_COMMON_CONTEXT_H_
