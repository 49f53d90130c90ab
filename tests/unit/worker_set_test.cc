// crl-timing's worker set: a request that names the worker holding its
// artifact goes there; the others take the workers in turn; dns:/// entries
// resolve to every address of the name.
#include <catch2/catch.hpp>

#include <set>

#include "common/clock.h"
#include "common/resolve.h"
#include "services/timing/worker_set.h"
#include "services/worker/fake_worker_client.h"

namespace crl::timing {
namespace {

TEST_CASE("worker set: the hinted worker, else round robin; names resolved", "[timing][workers]") {
  FakeClock clock;
  std::vector<std::string> made;
  WorkerSet set({"10.0.0.1:50051", "10.0.0.2:50051", "10.0.0.3:50051"},
                [&](const std::string& a) -> absl::StatusOr<std::unique_ptr<WorkerClientInterface>> {
                  made.push_back(a);
                  return std::unique_ptr<WorkerClientInterface>(std::make_unique<FakeWorkerClient>());
                },
                &clock);
  auto w2 = set.Pick("10.0.0.2:50051");
  REQUIRE(w2.ok());
  for (int i = 0; i < 5; ++i) CHECK(*set.Pick("10.0.0.2:50051") == *w2);  // affinity
  std::set<WorkerClientInterface*> seen;
  for (int i = 0; i < 6; ++i) {
    auto w = set.Pick("");  // an unknown or empty hint: in turn
    REQUIRE(w.ok());
    seen.insert(*w);
  }
  CHECK(seen.size() == 3);
  CHECK(made.size() == 3);  // one client per address, kept
  CHECK(*set.Pick("192.168.9.9:1") != nullptr);

  auto local = ResolveAddresses({"dns:///localhost:50051", "10.1.1.1:7"});
  REQUIRE(local.ok());
  CHECK(std::find(local->begin(), local->end(), "127.0.0.1:50051") != local->end());
  CHECK(local->back() == "10.1.1.1:7");
  CHECK(ResolveAddresses({"dns:///no-such-host.invalid:1"}).status().code() == absl::StatusCode::kUnavailable);
  CHECK(ResolveAddresses({"dns:///nohost"}).status().code() == absl::StatusCode::kInvalidArgument);
  WorkerSet none({"dns:///no-such-host.invalid:1"}, nullptr, &clock);
  CHECK(none.Pick("").status().code() == absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace crl::timing
