// tests/runner/sandbox_test.cc — SpawnSandboxed: exit reporting, limits,
// isolation (network, filesystem, /dev, /proc, env, identity), no leaks.
#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "runner/sandbox.h"
#include "tests/support/runner_test_util.h"

namespace crl::runner {
namespace {

using testing::RunSandboxed;
using testing::TempDir;
using testing::TestPolicy;

int CountOpenFds() {
  int n = 0;
  DIR* d = opendir("/proc/self/fd");
  while (struct dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(d);
  return n;
}

std::set<std::string> Lines(const std::string& text) {
  std::set<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) out.insert(line);
  }
  return out;
}

bool PathExists(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0;
}

TEST_CASE("namespaces are available here", "[sandbox]") {
  std::string why;
  INFO(why);
  REQUIRE(NamespacesAvailable(&why));
}

TEST_CASE("sandboxed /bin/true and exit codes", "[sandbox]") {
  ExitInfo info = RunSandboxed(TestPolicy(), {"/bin/true"});
  INFO(info.Describe() << " log=" << info.log);
  CHECK(info.kind == ExitInfo::kExited);
  CHECK(info.exit_code == 0);

  info = RunSandboxed(TestPolicy(), {"/bin/sh", "-c", "exit 3"});
  CHECK(info.kind == ExitInfo::kExited);
  CHECK(info.exit_code == 3);

  info = RunSandboxed(TestPolicy(), {"/bin/sh", "-c", "kill -SEGV $$"});
  CHECK(info.kind == ExitInfo::kSignaled);
  CHECK(info.signal == SIGSEGV);
}

TEST_CASE("wall timeout kills the whole tree quickly", "[sandbox]") {
  SandboxPolicy p = TestPolicy();
  p.wall_timeout_seconds = 0.5;
  // sh forks sleep: both must die.
  ExitInfo info = RunSandboxed(p, {"/bin/sh", "-c", "sleep 100; echo never"});
  INFO(info.Describe());
  CHECK(info.kind == ExitInfo::kTimedOut);
  CHECK(info.wall_seconds < 3.0);
  CHECK(info.log.find("never") == std::string::npos);
}

TEST_CASE("Wait timeout shorter than the policy also kills", "[sandbox]") {
  std::string error;
  auto proc = SpawnSandboxed(TestPolicy(), {"/bin/sleep", "100"}, &error);
  REQUIRE(proc);
  CHECK(proc->Running());
  ExitInfo info = proc->Wait(0.2);
  CHECK(info.kind == ExitInfo::kTimedOut);
  CHECK_FALSE(proc->Running());
  // No zombie left: the child is reaped.
  CHECK(waitpid(proc->pid(), nullptr, WNOHANG) == -1);
}

TEST_CASE("Kill() and the destructor reap the process", "[sandbox]") {
  std::string error;
  pid_t pid;
  {
    auto proc = SpawnSandboxed(TestPolicy(), {"/bin/sleep", "100"}, &error);
    REQUIRE(proc);
    pid = proc->pid();
    ExitInfo info = proc->Kill();
    CHECK(info.kind == ExitInfo::kSignaled);
    CHECK(info.signal == SIGKILL);
  }
  CHECK(kill(pid, 0) == -1);
  {
    auto proc = SpawnSandboxed(TestPolicy(), {"/bin/sleep", "100"}, &error);
    REQUIRE(proc);
    pid = proc->pid();
  }  // destructor kills and reaps
  CHECK(kill(pid, 0) == -1);
}

TEST_CASE("PinTo moves the sandboxed tree onto one CPU", "[sandbox]") {
  std::string error;
  // The shell is moved while it sleeps; what it starts afterwards inherits
  // the CPU and reports it.
  auto proc = SpawnSandboxed(TestPolicy(), {"/bin/sh", "-c", "/bin/sleep 0.5; /bin/cat /proc/self/status"}, &error);
  REQUIRE(proc);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  REQUIRE(proc->PinTo(0));
  ExitInfo info = proc->Wait(10);
  REQUIRE(info.kind == ExitInfo::kExited);
  CHECK_THAT(info.log, Catch::Matches("(.|\n)*Cpus_allowed_list:\\s+0\n(.|\n)*"));
  CHECK_FALSE(proc->PinTo(0));  // ended: nothing to move
}

TEST_CASE("Freeze stops the sandboxed tree until it is let go; a frozen tree is killed at once", "[sandbox]") {
  std::string error;
  // The shell's child sleeps 0.3 s and the shell then prints: frozen for a
  // second, neither can.
  auto proc = SpawnSandboxed(TestPolicy(), {"/bin/sh", "-c", "/bin/sleep 0.3; echo done"}, &error);
  REQUIRE(proc);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  REQUIRE(proc->Freeze(true));
  CHECK_FALSE(proc->WaitFor(1.0));
  CHECK(proc->LogSoFar().find("done") == std::string::npos);
  REQUIRE(proc->Freeze(false));
  ExitInfo info = proc->Wait(10);
  CHECK(info.kind == ExitInfo::kExited);
  CHECK(info.log.find("done") != std::string::npos);
  CHECK_FALSE(proc->Freeze(true));  // ended: nothing to stop

  auto frozen = SpawnSandboxed(TestPolicy(), {"/bin/sleep", "100"}, &error);
  REQUIRE(frozen);
  REQUIRE(frozen->Freeze(true));
  const auto t0 = std::chrono::steady_clock::now();
  info = frozen->Kill();
  CHECK(info.kind == ExitInfo::kSignaled);
  CHECK(info.signal == SIGKILL);
  // Not the two seconds a frozen helper would take to not answer SIGTERM.
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(1500));
}

TEST_CASE("stdout and stderr are captured and truncated", "[sandbox]") {
  ExitInfo info = RunSandboxed(TestPolicy(), {"/bin/sh", "-c", "echo out; echo err >&2"});
  CHECK(info.log.find("out\n") != std::string::npos);
  CHECK(info.log.find("err\n") != std::string::npos);
  CHECK_FALSE(info.log_truncated);

  SandboxPolicy p = TestPolicy();
  p.max_log_bytes = 1000;
  // 4 MiB of output: more than a pipe holds; the child must not block.
  info = RunSandboxed(p, {"/bin/sh", "-c", "head -c 4194304 /dev/zero | tr '\\0' x; exit 5"});
  INFO(info.Describe());
  CHECK(info.kind == ExitInfo::kExited);
  CHECK(info.exit_code == 5);
  CHECK(info.log.size() == 1000);
  CHECK(info.log_truncated);
}

TEST_CASE("setup failures are reported precisely", "[sandbox]") {
  SandboxPolicy p = TestPolicy();
  p.workdir = "/nonexistent/crl-workdir";
  ExitInfo info = RunSandboxed(p, {"/bin/true"});
  INFO(info.Describe());
  CHECK(info.kind == ExitInfo::kSetupFailed);
  CHECK(info.setup_error.find("/nonexistent/crl-workdir") != std::string::npos);
  CHECK(info.setup_error.find("No such file") != std::string::npos);

  p = TestPolicy();
  p.extra_device_nodes = {"/dev/nvidia-does-not-exist"};
  info = RunSandboxed(p, {"/bin/true"});
  CHECK(info.kind == ExitInfo::kSetupFailed);
  CHECK(info.setup_error.find("/dev/nvidia-does-not-exist") != std::string::npos);

  // A missing executable fails on the caller side.
  std::string error;
  auto proc = SpawnSandboxed(TestPolicy(), {"/bin/no-such-binary"}, &error);
  CHECK_FALSE(proc);
  CHECK(error.find("/bin/no-such-binary") != std::string::npos);

  // The runner profile forbids execve and is refused.
  p = TestPolicy();
  p.seccomp = SeccompProfile::kRunner;
  CHECK_FALSE(SpawnSandboxed(p, {"/bin/true"}, &error));
  CHECK_FALSE(SpawnSandboxed(TestPolicy(), {"relative/path"}, &error));
}

TEST_CASE("no network inside", "[sandbox]") {
  ExitInfo info = RunSandboxed(TestPolicy(), {"/bin/sh", "-c", "cat /proc/net/dev; ls /sys/class/net"});
  INFO(info.log);
  REQUIRE(info.kind == ExitInfo::kExited);
  CHECK(info.log.find("lo:") != std::string::npos);
  // Only the loopback device exists (and it is down).
  std::istringstream in(info.log);
  std::string line;
  int devices = 0;
  while (std::getline(in, line)) {
    if (line.find(':') != std::string::npos && line.find('|') == std::string::npos) ++devices;
  }
  CHECK(devices == 1);
  CHECK(info.log.find("eth") == std::string::npos);
}

TEST_CASE("host filesystem is read-only, /tmp is private and writable", "[sandbox]") {
  const std::string probe = "/work/crl-sandbox-probe-" + std::to_string(getpid());
  const std::string tmp_probe = "/tmp/crl-sandbox-probe-" + std::to_string(getpid());
  ExitInfo info = RunSandboxed(
      TestPolicy(), {"/bin/sh", "-c",
                     "touch " + probe + " 2>/dev/null && echo WROTE_HOST; "
                     "echo hi >> /etc/hostname 2>/dev/null && echo WROTE_ETC; "
                     "echo secret > " + tmp_probe + " && cat " + tmp_probe + "; "
                     "touch /dev/crl 2>/dev/null && echo WROTE_DEV; "
                     "echo 1 > /proc/sys/kernel/core_pattern 2>/dev/null && echo WROTE_PROC; "
                     "exit 0"});
  INFO(info.log);
  REQUIRE(info.kind == ExitInfo::kExited);
  CHECK(info.log.find("WROTE_") == std::string::npos);
  CHECK(info.log.find("secret") != std::string::npos);
  CHECK_FALSE(PathExists(probe));
  CHECK_FALSE(PathExists(tmp_probe));  // the sandbox's /tmp is its own
}

TEST_CASE("the tmpfs size and RLIMIT_FSIZE are enforced", "[sandbox]") {
  SandboxPolicy p = TestPolicy();
  p.tmpfs_bytes = 4ull << 20;
  ExitInfo info =
      RunSandboxed(p, {"/bin/sh", "-c", "dd if=/dev/zero of=/tmp/big bs=1M count=16 2>&1"});
  INFO(info.log);
  CHECK(info.kind == ExitInfo::kExited);
  CHECK(info.exit_code != 0);
  CHECK(info.log.find("No space left") != std::string::npos);

  p = TestPolicy();
  p.file_size_bytes = 1 << 20;
  info = RunSandboxed(p, {"/bin/dd", "if=/dev/zero", "of=/tmp/big", "bs=1M", "count=4"});
  INFO(info.Describe());
  CHECK(info.kind == ExitInfo::kSignaled);
  CHECK(info.signal == SIGXFSZ);
  CHECK(info.file_size_limit_hit);
}

TEST_CASE("CPU limit", "[sandbox]") {
  SandboxPolicy p = TestPolicy();
  p.cpu_seconds = 1;
  ExitInfo info = RunSandboxed(p, {"/bin/sh", "-c", "while :; do :; done"});
  INFO(info.Describe());
  CHECK(info.kind == ExitInfo::kSignaled);
  CHECK(info.cpu_limit_hit);
  CHECK(info.cpu_seconds >= 0.9);
}

TEST_CASE("/dev holds only the basic nodes; /proc only the sandbox", "[sandbox]") {
  ExitInfo info = RunSandboxed(TestPolicy(), {"/bin/ls", "-1", "/dev"});
  INFO(info.log);
  REQUIRE(info.kind == ExitInfo::kExited);
  std::set<std::string> want = {"fd",     "full",   "null",    "random", "shm",
                                "stderr", "stdin", "stdout", "urandom", "zero"};
  CHECK(Lines(info.log) == want);
  CHECK(info.log.find("nvidia") == std::string::npos);

  info = RunSandboxed(TestPolicy(), {"/bin/sh", "-c", "echo /dev/zero works > /dev/null && ls /proc | grep -c '^[0-9]'"});
  INFO(info.log);
  // init (1), sh (2), ls and grep: a handful, never the host's processes.
  CHECK(std::atoi(info.log.c_str()) <= 5);
}

TEST_CASE("environment is exactly the policy's", "[sandbox]") {
  setenv("CRL_SECRET_TEST", "hunter2", 1);
  SandboxPolicy p = TestPolicy();
  p.env = {"PATH=/usr/bin:/bin", "HOME=/tmp", "LANG=C", "FOO=bar"};
  ExitInfo info = RunSandboxed(p, {"/usr/bin/env"});
  INFO(info.log);
  CHECK(Lines(info.log) == std::set<std::string>(p.env.begin(), p.env.end()));
  CHECK(info.log.find("hunter2") == std::string::npos);
}

TEST_CASE("identity: unprivileged, no capabilities, no_new_privs", "[sandbox]") {
  ExitInfo info = RunSandboxed(
      TestPolicy(), {"/bin/sh", "-c", "id -u; id -g; grep -E '^(CapEff|CapBnd|NoNewPrivs)' /proc/self/status"});
  INFO(info.log);
  REQUIRE(info.kind == ExitInfo::kExited);
  if (geteuid() == 0) CHECK(info.log.find("65534\n65534\n") == 0);
  CHECK(info.log.find("CapEff:\t0000000000000000") != std::string::npos);
  CHECK(info.log.find("CapBnd:\t0000000000000000") != std::string::npos);
  CHECK(info.log.find("NoNewPrivs:\t1") != std::string::npos);
}

TEST_CASE("workdir and read-only paths under /tmp are visible", "[sandbox]") {
  TempDir work;
  TempDir ro;
  REQUIRE(chown(work.path().c_str(), 65534, 65534) == 0);
  {
    std::ofstream(ro.path() + "/input.txt") << "payload\n";
  }
  SandboxPolicy p = TestPolicy();
  p.workdir = work.path();
  p.readonly_paths = {ro.path()};
  ExitInfo info = RunSandboxed(
      p, {"/bin/sh", "-c",
          "pwd; cat " + ro.path() + "/input.txt; echo result > out.txt; "
          "touch " + ro.path() + "/x 2>/dev/null && echo WROTE_RO; exit 0"});
  INFO(info.Describe() << "\n" << info.log);
  REQUIRE(info.kind == ExitInfo::kExited);
  CHECK(info.log.find(work.path() + "\n") == 0);
  CHECK(info.log.find("payload") != std::string::npos);
  CHECK(info.log.find("WROTE_RO") == std::string::npos);
  std::ifstream out(work.path() + "/out.txt");
  std::string text;
  std::getline(out, text);
  CHECK(text == "result");
}

TEST_CASE("without namespaces: still env, fds, limits", "[sandbox]") {
  SandboxPolicy p = TestPolicy();
  p.isolate_namespaces = false;
  p.env = {"A=1"};
  ExitInfo info = RunSandboxed(p, {"/usr/bin/env"});
  CHECK(info.kind == ExitInfo::kExited);
  CHECK(Lines(info.log) == std::set<std::string>{"A=1"});
  info = RunSandboxed(p, {"/bin/sh", "-c", "ls /proc/self/fd"});
  // 0-4 plus the fd of ls's own directory listing.
  CHECK(Lines(info.log).size() <= 6);
}

TEST_CASE("compiler profile via crl-runner --exec-sandboxed", "[sandbox][seccomp]") {
  CRL_REQUIRE_SECCOMP();
  SandboxPolicy p = testing::RunnerClient::HostPolicy();
  ExitInfo info = RunSandboxed(
      p, {CRL_RUNNER_PATH, "--exec-sandboxed", "--", "/bin/sh", "-c", "echo compiled | cat"});
  INFO(info.Describe() << " " << info.log);
  CHECK(info.kind == ExitInfo::kExited);
  CHECK(info.exit_code == 0);
  CHECK(info.log.find("compiled") != std::string::npos);

  // The runner profile forbids exec: the exec itself is killed.
  info = RunSandboxed(p, {CRL_RUNNER_PATH, "--exec-sandboxed", "--profile=runner", "--",
                          "/bin/true"});
  CHECK(info.kind == ExitInfo::kSignaled);
  CHECK(info.seccomp_violation);

  // The compiler profile allows fork/exec but not ptrace.
  info = RunSandboxed(p, {CRL_RUNNER_PATH, "--exec-sandboxed", "--", "/usr/bin/unshare", "-U",
                          "/bin/true"});
  CHECK(info.kind == ExitInfo::kSignaled);
  CHECK(info.seccomp_violation);

  // Seccomp in the policy itself (installed right before execve).
  p.seccomp = SeccompProfile::kCompiler;
  info = RunSandboxed(p, {"/bin/sh", "-c", "echo ok | cat"});
  CHECK(info.kind == ExitInfo::kExited);
  CHECK(info.log.find("ok") != std::string::npos);
}

TEST_CASE("no descriptor or child leaks in the caller", "[sandbox]") {
  int before = CountOpenFds();
  for (int i = 0; i < 5; ++i) {
    ExitInfo info = RunSandboxed(TestPolicy(), {"/bin/true"});
    CHECK(info.kind == ExitInfo::kExited);
    SandboxPolicy p = TestPolicy();
    p.workdir = "/nonexistent";
    CHECK(RunSandboxed(p, {"/bin/true"}).kind == ExitInfo::kSetupFailed);
  }
  CHECK(CountOpenFds() == before);
  errno = 0;
  CHECK(waitpid(-1, nullptr, WNOHANG) == -1);
  CHECK(errno == ECHILD);
}

}  // namespace
}  // namespace crl::runner
