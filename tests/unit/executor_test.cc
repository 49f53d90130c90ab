#include <catch2/catch.hpp>

#include <atomic>

#include "absl/synchronization/notification.h"
#include "common/executor.h"

namespace crl {
namespace {

TEST_CASE("a full executor answers RESOURCE_EXHAUSTED instead of waiting", "[executor]") {
  BoundedExecutor executor({"test", 1, 2});
  absl::Notification release;
  absl::Notification started;
  std::atomic<int> ran{0};
  // Occupy the single thread.
  REQUIRE(executor.Submit([&] {
    started.Notify();
    release.WaitForNotification();
    ++ran;
  }).ok());
  started.WaitForNotification();
  CHECK(executor.Busy() == 1);
  // Two queue slots.
  REQUIRE(executor.Submit([&] { ++ran; }).ok());
  REQUIRE(executor.Submit([&] { ++ran; }).ok());
  CHECK(executor.QueueDepth() == 2);
  absl::Status full = executor.Submit([&] { ++ran; });
  CHECK(full.code() == absl::StatusCode::kResourceExhausted);
  CHECK(std::string(full.message()).find("queue full") != std::string::npos);
  release.Notify();
  executor.Shutdown();
  CHECK(ran == 3);  // queued work still ran; the rejected task never did
}

TEST_CASE("after Shutdown the executor refuses work with UNAVAILABLE", "[executor]") {
  BoundedExecutor executor({"test", 2, 4});
  executor.Shutdown();
  executor.Shutdown();  // idempotent
  CHECK(executor.Submit([] {}).code() == absl::StatusCode::kUnavailable);
}

TEST_CASE("max_queue 0 accepts work only for idle threads", "[executor]") {
  BoundedExecutor executor({"test", 1, 0});
  absl::Notification release, started;
  // The thread may not have reached its wait yet; retry until it is idle.
  absl::Status s;
  for (int i = 0; i < 1000; ++i) {
    s = executor.Submit([&] {
      started.Notify();
      release.WaitForNotification();
    });
    if (s.ok()) break;
    absl::SleepFor(absl::Milliseconds(1));
  }
  REQUIRE(s.ok());
  started.WaitForNotification();
  CHECK(executor.Submit([] {}).code() == absl::StatusCode::kResourceExhausted);
  release.Notify();
}

}  // namespace
}  // namespace crl
