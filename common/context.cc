#include "common/context.h"

#include <utility>

namespace crl {

RequestContext::RequestContext() : RequestContext(RealClock::Get(), absl::InfiniteFuture()) {}

RequestContext::RequestContext(ClockInterface* clock, absl::Time deadline,
                               std::function<bool()> is_cancelled)
    : clock_(clock), deadline_(deadline), is_cancelled_(std::move(is_cancelled)) {}

const RequestContext& RequestContext::Background() {
  static const RequestContext* background = new RequestContext();
  return *background;
}

bool RequestContext::IsCancelled() const {
  return cancelled_.load() || (is_cancelled_ && is_cancelled_());
}

bool RequestContext::Expired() const {
  return deadline_ != absl::InfiniteFuture() && clock_->Now() >= deadline_;
}

absl::Duration RequestContext::Remaining() const {
  if (deadline_ == absl::InfiniteFuture()) return absl::InfiniteDuration();
  return std::max(absl::ZeroDuration(), deadline_ - clock_->Now());
}

absl::Status RequestContext::Check() const {
  if (IsCancelled()) return absl::CancelledError("the request was cancelled");
  if (Expired()) return absl::DeadlineExceededError("the request's deadline passed");
  return absl::OkStatus();
}

}  // namespace crl
