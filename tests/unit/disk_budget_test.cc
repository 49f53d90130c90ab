// The worker's disk budget: entries are measured, evicted least recently
// used first when over budget, never while in recent use, and counted.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "common/clock.h"
#include "services/worker/compile/disk_budget.h"

namespace crl {
namespace {

namespace fs = std::filesystem;

std::string Entry(const fs::path& root, const std::string& name, size_t bytes) {
  fs::create_directories(root / name);
  std::ofstream(root / name / "lib.so") << std::string(bytes, 'x');
  return (root / name).string();
}

TEST_CASE("disk budget: LRU eviction above the budget, recent entries kept, bytes and evictions reported",
          "[worker][disk]") {
  const fs::path root = fs::temp_directory_path() / ("crl-budget-" + std::to_string(::getpid()));
  fs::remove_all(root);
  FakeClock clock;
  const std::string a = Entry(root, "a", 400);
  DiskBudgetOptions o;
  o.max_bytes = 1000;
  o.keep_recent = absl::Minutes(10);
  DiskBudget budget({root.string()}, o, &clock);
  int64_t seen_bytes = -1, seen_evictions = -1;
  budget.SetObserver([&](int64_t bytes, int64_t evictions) {
    seen_bytes = bytes;
    seen_evictions = evictions;
  });
  budget.Scan();
  CHECK(budget.bytes() == 400);
  clock.Advance(absl::Minutes(20));
  const std::string b = Entry(root, "b", 400);
  budget.Added(b);
  CHECK(budget.bytes() == 800);
  clock.Advance(absl::Minutes(20));
  budget.Touch(a);  // a is now newer than b
  clock.Advance(absl::Minutes(20));
  // Over budget: b, the least recently used, goes.
  const std::string c = Entry(root, "c", 400);
  budget.Added(c);
  CHECK(budget.bytes() == 800);
  CHECK(budget.evictions() == 1);
  CHECK_FALSE(fs::exists(b));
  CHECK(fs::exists(a));
  CHECK(seen_bytes == 800);
  CHECK(seen_evictions == 1);
  // Everything in recent use: over budget rather than break work in flight.
  const std::string d = Entry(root, "d", 400);
  budget.Added(d);
  CHECK(fs::exists(c));
  CHECK(fs::exists(d));
  // a was used 20 minutes ago: it may go, and does.
  CHECK_FALSE(fs::exists(a));
  CHECK(budget.bytes() == 800);
  budget.Touch(c);
  const std::string e = Entry(root, "e", 400);
  budget.Added(e);
  CHECK(budget.bytes() == 1200);  // c, d, e all recent
  CHECK(budget.evictions() == 2);
  fs::remove_all(root);
}

}  // namespace
}  // namespace crl
