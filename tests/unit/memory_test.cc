// common/memory.h: the memory a process may use, from the machine and its
// cgroup's limit.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/memory.h"
#include "services/worker/verify/reference_cache.h"

namespace crl {
namespace {

namespace fs = std::filesystem;

TEST_CASE("cgroup memory limits parse as bytes; unlimited and garbage as none", "[memory]") {
  CHECK(ParseCgroupMemoryLimit("8589934592\n") == int64_t{8} << 30);
  CHECK(ParseCgroupMemoryLimit(" 1048576 ") == int64_t{1} << 20);
  CHECK_FALSE(ParseCgroupMemoryLimit("max\n").has_value());
  CHECK_FALSE(ParseCgroupMemoryLimit("9223372036854771712\n").has_value());  // v1's "no limit"
  CHECK_FALSE(ParseCgroupMemoryLimit("").has_value());
  CHECK_FALSE(ParseCgroupMemoryLimit("12 GiB").has_value());
  CHECK_FALSE(ParseCgroupMemoryLimit("-5").has_value());
}

TEST_CASE("usable memory is the smaller of the machine's and its cgroup's limit", "[memory]") {
  const int64_t physical = static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE);
  REQUIRE(physical > 0);
  const fs::path root = fs::temp_directory_path() / ("crl-memory-test-" + std::to_string(getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "memory");
  auto write = [](const fs::path& p, const std::string& text) { std::ofstream(p) << text; };
  // No limit file: the machine's memory.
  CHECK(UsableMemoryBytes(root.string()) == physical);
  // v1: the limit under memory/.
  write(root / "memory" / "memory.limit_in_bytes", "1073741824\n");
  CHECK(UsableMemoryBytes(root.string()) == std::min<int64_t>(physical, int64_t{1} << 30));
  // v2 first; "max" falls through to v1's.
  write(root / "memory.max", "536870912\n");
  CHECK(UsableMemoryBytes(root.string()) == std::min<int64_t>(physical, int64_t{512} << 20));
  write(root / "memory.max", "max\n");
  CHECK(UsableMemoryBytes(root.string()) == std::min<int64_t>(physical, int64_t{1} << 30));
  // A limit above the machine's memory changes nothing.
  write(root / "memory.max", std::to_string(physical * 4) + "\n");
  CHECK(UsableMemoryBytes(root.string()) == physical);
  fs::remove_all(root);
}

TEST_CASE("the reference cache's default budget is an eighth of the worker's memory, at least 1 GiB", "[memory]") {
  constexpr int64_t kGiB = int64_t{1} << 30;
  CHECK(ReferenceCacheBytesFor(128 * kGiB) == 16 * kGiB);  // the GPU machine of docs/benchmarks.md
  CHECK(ReferenceCacheBytesFor(24 * kGiB) == 3 * kGiB);
  CHECK(ReferenceCacheBytesFor(4 * kGiB) == kGiB);
  CHECK(ReferenceCacheBytesFor(0) == 4 * kGiB);  // unknown
}

}  // namespace
}  // namespace crl
