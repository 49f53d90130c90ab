// common/memory.h: the memory a process may use, from the machine and its
// cgroup's limit, and a heap that keeps what it frees.
#include <catch2/catch.hpp>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

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

volatile char g_sink;  // a read the compiler cannot drop

// Page faults taken by the calling thread while it allocates, touches and
// frees `bytes` twice; the second time is what is returned.
long FaultsOfSecondAllocation(size_t bytes) {
  auto once = [bytes] {
    rusage before{}, after{};
    getrusage(RUSAGE_THREAD, &before);
    char* p = static_cast<char*>(std::malloc(bytes));
    if (p == nullptr) return -1L;
    std::memset(p, 1, bytes);
    g_sink = p[bytes / 2];
    std::free(p);
    getrusage(RUSAGE_THREAD, &after);
    return after.ru_minflt - before.ru_minflt;
  };
  once();
  return once();
}

// The measurement, in a process of its own: the heap settings are the whole
// process's, and in a process whose threads have already allocated, a new
// thread takes one of their arenas whatever M_ARENA_MAX says. Hidden; the
// case below runs it through /proc/self/exe.
TEST_CASE("memory child: page faults of a second 96 MiB block, on the main thread and on another",
          "[.][memory-child]") {
  RetainFreedHeap();
  constexpr size_t kBytes = size_t{96} << 20;  // attention scores of 2 x 6 heads x 1,300^2 floats
  const long on_main = FaultsOfSecondAllocation(kBytes);
  long on_thread = -1;
  std::thread([&] { on_thread = FaultsOfSecondAllocation(kBytes); }).join();
  // 96 MiB mapped afresh is 24,576 faults of 4 KiB.
  INFO("faults on the main thread " << on_main << ", on another thread " << on_thread);
  CHECK(on_main >= 0);
  CHECK(on_main < 1000);
  CHECK(on_thread >= 0);
  CHECK(on_thread < 1000);
}

TEST_CASE("a freed block over 64 MiB is reused without page faults on any thread", "[memory]") {
  char self[4096] = {};
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  REQUIRE(n > 0);
  const std::string command = std::string("'") + self + "' '[memory-child]' 2>&1";
  FILE* child = popen(command.c_str(), "r");
  REQUIRE(child != nullptr);
  std::string output;
  char buffer[4096];
  for (size_t got; (got = fread(buffer, 1, sizeof buffer, child)) > 0;) output.append(buffer, got);
  const int status = pclose(child);
  INFO(output);
  CHECK(output.find("1 test case") != std::string::npos);  // the hidden case ran
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

}  // namespace
}  // namespace crl
