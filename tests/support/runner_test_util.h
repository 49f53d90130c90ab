// tests/runner/test_util.h — helpers shared by the runner tests.
#ifndef CRL_TESTS_SUPPORT_RUNNER_TEST_UTIL_H_
#define CRL_TESTS_SUPPORT_RUNNER_TEST_UTIL_H_

#include <memory>
#include <string>
#include <vector>

#include "runner/protocol.h"
#include "tests/support/temp_dir.h"
#include "runner/sandbox.h"

// Catch2 v2 has no SKIP: tests that need seccomp return early with a warning
// when the build has no libseccomp.
#define CRL_REQUIRE_SECCOMP()                                        \
  do {                                                               \
    if (!::crl::runner::SeccompAvailable()) {                        \
      WARN("skipped: this build has no libseccomp");                 \
      return;                                                        \
    }                                                                \
  } while (0)

namespace crl::runner::testing {

// A scratch directory per test (tests/support/temp_dir.h).
using crl::testing::TempDir;

// Ignores SIGPIPE once (writes to dead runners must fail, not kill us).
void IgnoreSigpipe();

// A sandbox policy for tests: short limits, isolation on.
SandboxPolicy TestPolicy();

// Spawns argv under policy and waits for it.
ExitInfo RunSandboxed(const SandboxPolicy& policy, const std::vector<std::string>& argv);

// Path of a hostile/test candidate library, e.g. HostileLibrary("segfault").
std::string HostileLibrary(const std::string& name);

// A crl-runner process in the sandbox, driven over the protocol.
class RunnerClient {
 public:
  // The policy of host runners in tests (RLIMIT_AS 4 GiB, 10 s wall).
  static SandboxPolicy HostPolicy();

  explicit RunnerClient(const SandboxPolicy& policy = HostPolicy());
  ~RunnerClient();

  bool spawned() const { return proc_ != nullptr; }
  SandboxedProcess* process() { return proc_.get(); }

  // Sends LoadRequest and reads LoadResult. False if the channel broke.
  bool Load(const std::string& library, LoadResult* result, std::string* error);
  bool Send(const LoadRequest& req, LoadResult* result, std::string* error);
  bool Call(const CallRequest& req, CallResult* result, std::string* error);
  bool TimedCall(const TimedCallRequest& req, TimedCallResult* result, std::string* error);
  void Shutdown();
  ExitInfo Wait(double timeout_seconds = -1);

 private:
  std::unique_ptr<SandboxedProcess> proc_;
};

// A CallRequest for y = a + b over float32 vectors of n elements.
CallRequest AddRequest(int64_t n, uint64_t call_id = 1);

// Loads `library` in a fresh runner and runs AddRequest(n): returns true if
// the runner answered OK with the right sums. Used after hostile runs to show
// that spawning a fresh runner still works.
bool FreshRunnerWorks();

}  // namespace crl::runner::testing

#endif  // CRL_TESTS_SUPPORT_RUNNER_TEST_UTIL_H_
