// RequestContext: deadlines on an injected clock, cancellation from anywhere.
#include <catch2/catch.hpp>

#include <atomic>

#include "common/context.h"

namespace crl {
namespace {

TEST_CASE("a context expires at its deadline on its own clock", "[context]") {
  FakeClock clock;
  RequestContext ctx(&clock, clock.Now() + absl::Seconds(10));
  CHECK(ctx.Check().ok());
  CHECK(ctx.Remaining() == absl::Seconds(10));
  clock.Advance(absl::Seconds(9));
  CHECK(ctx.Check().ok());
  clock.Advance(absl::Seconds(1));
  CHECK(ctx.Check().code() == absl::StatusCode::kDeadlineExceeded);
  CHECK(ctx.Remaining() == absl::ZeroDuration());
}

TEST_CASE("cancellation wins over the deadline and reaches every check", "[context]") {
  FakeClock clock;
  RequestContext ctx(&clock, absl::InfiniteFuture());
  CHECK(ctx.Remaining() == absl::InfiniteDuration());
  ctx.Cancel();
  CHECK(ctx.IsCancelled());
  CHECK(ctx.Check().code() == absl::StatusCode::kCancelled);

  std::atomic<bool> client_gone{false};
  RequestContext polled(&clock, absl::InfiniteFuture(), [&] { return client_gone.load(); });
  CHECK(polled.Check().ok());
  client_gone = true;
  CHECK(polled.Check().code() == absl::StatusCode::kCancelled);
}

TEST_CASE("the background context never ends", "[context]") {
  CHECK(RequestContext::Background().Check().ok());
  CHECK(RequestContext::Background().deadline() == absl::InfiniteFuture());
}

}  // namespace
}  // namespace crl
