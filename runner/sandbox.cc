// runner/sandbox.cc — see sandbox.h for the process tree and the view.
//
// The parent's side: checking the policy, preparing the child's plan,
// forking, and supervising the process tree (limits, log, exit). What runs
// between fork() and execve() is sandbox_child.cc's.
#include "runner/sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>

#include "runner/clock.h"
#include "runner/sandbox_child.h"
#include "runner/sandbox_plan.h"

namespace crl::runner {
namespace {

using sandbox_child::BindPlan;
using sandbox_child::ChildPlan;
using sandbox_child::CloseFd;
using sandbox_child::CloseFrom;
using sandbox_child::kFirstFreeFd;
using sandbox_child::kSetupExitCode;
using sandbox_child::RunHelper;

double Now() { return MonotonicSeconds(); }

// ---------------------------------------------------------------------------
// Parent side.

const char* SignalName(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    case SIGKILL: return "SIGKILL";
    case SIGSYS: return "SIGSYS";
    case SIGXCPU: return "SIGXCPU";
    case SIGXFSZ: return "SIGXFSZ";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGTERM: return "SIGTERM";
    case SIGPIPE: return "SIGPIPE";
    case SIGTRAP: return "SIGTRAP";
    default: return "signal";
  }
}

bool WriteProcFile(pid_t pid, const char* name, const std::string& text, std::string* error) {
  std::string path = "/proc/" + std::to_string(pid) + "/" + name;
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT && std::strcmp(name, "setgroups") == 0) return true;
    *error = "open " + path + ": " + strerror(errno);
    return false;
  }
  ssize_t n = write(fd, text.data(), text.size());
  int err = errno;
  close(fd);
  if (n != static_cast<ssize_t>(text.size())) {
    *error = "write " + path + " ('" + text + "'): " + strerror(n < 0 ? err : EIO);
    return false;
  }
  return true;
}

// Reads from fd until EOF or the deadline; returns false on timeout.
// The user namespace's id maps, written for the helper once it says it has
// unshared ('R'); answers 'M' (mapped) or 'F' (failed, *error says why).
// A helper that fails before unsharing says nothing here: its message
// follows on the error pipe.
void MapChildIds(pid_t pid, const ChildPlan& plan, int helper_in, int helper_out, std::string* error) {
  char c = 0;
  struct pollfd p = {helper_out, POLLIN, 0};
  int r;
  do {
    r = poll(&p, 1, 30000);
  } while (r < 0 && errno == EINTR);
  if (r <= 0 || read(helper_out, &c, 1) != 1 || c != 'R') return;
  std::string uid_map, gid_map;
  if (geteuid() == 0) {
    uid_map = "0 0 1\n";
    gid_map = "0 0 1\n";
    if (plan.uid != 0) uid_map += std::to_string(plan.uid) + " " + std::to_string(plan.uid) + " 1\n";
    if (plan.gid != 0) gid_map += std::to_string(plan.gid) + " " + std::to_string(plan.gid) + " 1\n";
  } else {
    uid_map = std::to_string(geteuid()) + " " + std::to_string(geteuid()) + " 1\n";
    gid_map = std::to_string(getegid()) + " " + std::to_string(getegid()) + " 1\n";
  }
  std::string why;
  const bool ok = WriteProcFile(pid, "setgroups", "deny", &why) && WriteProcFile(pid, "uid_map", uid_map, &why) &&
                  WriteProcFile(pid, "gid_map", gid_map, &why);
  c = ok ? 'M' : 'F';
  ssize_t ignored = write(helper_in, &c, 1);
  (void)ignored;
  if (!ok) *error = "id maps: " + why;
}

bool ReadUntilEof(int fd, double deadline, std::string* out) {
  char buf[4096];
  for (;;) {
    struct pollfd p = {fd, POLLIN, 0};
    int ms = static_cast<int>(std::max(0.0, (deadline - Now()) * 1000.0));
    int r = poll(&p, 1, ms);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return true;
    if (out->size() < 8192) out->append(buf, static_cast<size_t>(n));
  }
}

}  // namespace

// Drains the log pipe on a thread, keeping the first `max` bytes.
struct SandboxedProcess::LogCollector {
  int fd = -1;
  int stop_fd = -1;  // eventfd: asks the thread to finish
  uint64_t max = 0;
  mutable std::mutex mu;
  std::string text;
  bool truncated = false;
  std::atomic<bool> eof{false};
  std::thread thread;

  void Run() {
    char buf[16384];
    for (;;) {
      struct pollfd p[2] = {{fd, POLLIN, 0}, {stop_fd, POLLIN, 0}};
      int r = poll(p, 2, -1);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) break;
      if (p[0].revents != 0) {
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (n <= 0) break;
        std::lock_guard<std::mutex> lock(mu);
        size_t keep = 0;
        if (text.size() < max) keep = std::min<size_t>(n, max - text.size());
        text.append(buf, keep);
        if (keep < static_cast<size_t>(n)) truncated = true;
        continue;
      }
      if (p[1].revents != 0) break;
    }
    eof = true;
  }

  // Waits up to `grace` seconds for EOF, then stops the thread.
  void Stop(double grace) {
    if (!thread.joinable()) return;
    double until = Now() + grace;
    while (!eof && Now() < until) {
      struct timespec ts = {0, 1000000};
      nanosleep(&ts, nullptr);
    }
    uint64_t one = 1;
    ssize_t ignored = write(stop_fd, &one, sizeof(one));
    (void)ignored;
    thread.join();
  }

  ~LogCollector() {
    Stop(0);
    CloseFd(&fd);
    CloseFd(&stop_fd);
  }
};

std::string ExitInfo::Describe() const {
  char buf[256];
  switch (kind) {
    case kExited:
      snprintf(buf, sizeof(buf), "exited %d after %.3f s", exit_code, wall_seconds);
      return buf;
    case kSignaled:
      if (seccomp_violation) return "killed by seccomp (SIGSYS)";
      snprintf(buf, sizeof(buf), "killed by signal %d (%s)%s%s", signal, SignalName(signal),
               cpu_limit_hit ? ", CPU limit" : "",
               file_size_limit_hit ? ", file size limit" : "");
      return buf;
    case kTimedOut:
      snprintf(buf, sizeof(buf), "timed out after %.3f s (killed)", wall_seconds);
      return buf;
    case kSetupFailed:
      return "sandbox setup failed: " + setup_error;
  }
  return "?";
}

SandboxedProcess::SandboxedProcess() = default;

SandboxedProcess::~SandboxedProcess() {
  if (!finished_) Kill();
  CloseFd(&to_child_);
  CloseFd(&from_child_);
  CloseFd(&pidfd_);
}

void SandboxedProcess::CloseToChild() { CloseFd(&to_child_); }

std::string SandboxedProcess::LogSoFar() const {
  if (!log_) return std::string();
  std::lock_guard<std::mutex> lock(log_->mu);
  return log_->text;
}

void SandboxedProcess::KillTree() {
  if (pid_ <= 0 || reaped_) return;
  // The child is not reaped yet, so neither its pid nor its process group id
  // can have been reused.
  if (isolated_ && !frozen_) {
    // Ask the helper (our code, never the candidate's) to kill init and reap
    // it: the PID namespace dies and nothing is orphaned. SIGKILL follows if
    // it does not exit promptly. A frozen helper could not answer: the
    // group's SIGKILL below takes init too, and the namespace with it.
    kill(pid_, SIGTERM);
    const double until = Now() + 2.0;
    for (;;) {
      siginfo_t si;
      memset(&si, 0, sizeof(si));
      if (waitid(P_PID, static_cast<id_t>(pid_), &si, WEXITED | WNOWAIT | WNOHANG) == 0 &&
          si.si_pid != 0) {
        break;
      }
      if (Now() >= until) break;
      if (pidfd_ >= 0) {
        struct pollfd p = {pidfd_, POLLIN, 0};
        poll(&p, 1, 10);
      } else {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, nullptr);
      }
    }
  }
  kill(-pid_, SIGKILL);
  kill(pid_, SIGKILL);
}

bool SandboxedProcess::Reap(bool block) {
  if (reaped_ || pid_ <= 0) return true;
  siginfo_t si;
  memset(&si, 0, sizeof(si));
  // Look first without reaping, so stragglers in the process group can be
  // killed while the group id is still ours.
  int rc = waitid(P_PID, static_cast<id_t>(pid_), &si, WEXITED | WNOWAIT | (block ? 0 : WNOHANG));
  if (rc != 0 || si.si_pid == 0) return false;
  kill(-pid_, SIGKILL);
  int status = 0;
  struct rusage ru;
  memset(&ru, 0, sizeof(ru));
  while (wait4(pid_, &status, 0, &ru) < 0 && errno == EINTR) {
  }
  reaped_ = true;
  wait_status_ = status;
  end_ = Now();
  cpu_seconds_ = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + ru.ru_stime.tv_sec +
                 ru.ru_stime.tv_usec * 1e-6;
  return true;
}

void SandboxedProcess::RestartWallClock(double limit_seconds) {
  start_ = Now();
  deadline_ = limit_seconds > 0 ? start_ + limit_seconds : 0;
}

bool SandboxedProcess::PinTo(int cpu) {
  // Not reaped yet, so the process group id cannot have been reused.
  if (pid_ <= 0 || reaped_ || finished_ || cpu < 0) return false;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  int moved = 0;
  std::error_code ec;
  for (pid_t p : GroupProcesses(pid_)) {
    for (const auto& task : std::filesystem::directory_iterator("/proc/" + std::to_string(p) + "/task", ec)) {
      const std::string tid = task.path().filename().string();
      if (!tid.empty() && tid.find_first_not_of("0123456789") == std::string::npos &&
          sched_setaffinity(static_cast<pid_t>(std::stol(tid)), sizeof(one), &one) == 0) {
        ++moved;
      }
    }
  }
  return moved > 0;
}

pid_t SandboxedProcess::Payload(std::string* error) {
  if (pid_ <= 0 || reaped_ || finished_) {
    if (error) *error = "the process has ended";
    return -1;
  }
  if (payload_pid_ <= 0) payload_pid_ = PayloadPid(pid_, isolated_);
  if (payload_pid_ <= 0 && error) *error = "the payload's process was not found";
  return payload_pid_;
}

bool SandboxedProcess::ReadPayloadMemory(const std::vector<MemoryRange>& ranges, std::string* out,
                                         std::string* error) {
  const pid_t payload = Payload(error);
  return payload > 0 && ReadProcessMemory(payload, ranges, out, error);
}

bool SandboxedProcess::WaitPayloadStopped(double timeout_seconds) {
  const pid_t payload = Payload(nullptr);
  return payload > 0 && WaitStopped(payload, timeout_seconds);
}

bool SandboxedProcess::WritePayloadMemory(uint64_t address, const std::string& bytes, std::string* error) {
  const pid_t payload = Payload(error);
  return payload > 0 && WriteProcessMemory(payload, address, bytes, error);
}

bool SandboxedProcess::Freeze(bool frozen) {
  // Not reaped yet, so the process group id cannot have been reused.
  if (pid_ <= 0 || reaped_ || finished_) return false;
  if (kill(-pid_, frozen ? SIGSTOP : SIGCONT) != 0) return false;
  frozen_ = frozen;
  return true;
}

bool SandboxedProcess::Running() {
  if (finished_ || reaped_) return false;
  return !Reap(false);
}

ExitInfo SandboxedProcess::Finish(bool timed_out) {
  if (finished_) return info_;
  finished_ = true;
  if (log_) log_->Stop(1.0);
  ExitInfo info;
  info.wall_seconds = (reaped_ ? end_ : Now()) - start_;
  info.cpu_seconds = cpu_seconds_;
  if (log_) {
    std::lock_guard<std::mutex> lock(log_->mu);
    info.log = log_->text;
    info.log_truncated = log_->truncated;
  }
  if (!setup_error_.empty()) {
    info.kind = ExitInfo::kSetupFailed;
    info.setup_error = setup_error_;
  } else if (timed_out) {
    info.kind = ExitInfo::kTimedOut;
    info.signal = SIGKILL;
  } else if (WIFEXITED(wait_status_)) {
    info.kind = ExitInfo::kExited;
    info.exit_code = WEXITSTATUS(wait_status_);
  } else if (WIFSIGNALED(wait_status_)) {
    info.kind = ExitInfo::kSignaled;
    info.signal = WTERMSIG(wait_status_);
    info.seccomp_violation = info.signal == SIGSYS;
    info.file_size_limit_hit = info.signal == SIGXFSZ;
    info.cpu_limit_hit = info.signal == SIGXCPU ||
                         (info.signal == SIGKILL && cpu_limit_seconds_ > 0 &&
                          cpu_seconds_ + 0.05 >= static_cast<double>(cpu_limit_seconds_));
  }
  bool failed = info.kind == ExitInfo::kSignaled ||
                (info.kind == ExitInfo::kExited && info.exit_code != 0);
  if (address_space_bytes_ > 0 && failed) {
    for (const char* needle : {"bad_alloc", "out of memory", "Out of memory",
                               "Cannot allocate memory", "memory exhausted"}) {
      if (info.log.find(needle) != std::string::npos) info.memory_limit_hint = true;
    }
  }
  CloseFd(&pidfd_);
  info_ = info;
  return info_;
}

void SandboxedProcess::AwaitExitEvent(double seconds) {
  int ms = static_cast<int>(std::min(seconds, 1.0) * 1000.0) + 1;
  if (pidfd_ >= 0) {
    struct pollfd p = {pidfd_, POLLIN, 0};
    poll(&p, 1, ms);
  } else {
    struct timespec ts = {0, 2000000};  // 2 ms
    nanosleep(&ts, nullptr);
  }
}

ExitInfo SandboxedProcess::Wait(double timeout_seconds) {
  if (finished_) return info_;
  double deadline = deadline_;
  if (timeout_seconds >= 0) {
    double d = Now() + timeout_seconds;
    if (deadline <= 0 || d < deadline) deadline = d;
  }
  while (!Reap(false)) {
    double left = deadline > 0 ? deadline - Now() : 1.0;
    if (deadline > 0 && left <= 0) {
      KillTree();
      Reap(true);
      return Finish(true);
    }
    AwaitExitEvent(left);
  }
  return Finish(false);
}

bool SandboxedProcess::WaitFor(double seconds) {
  if (finished_) return true;
  const double until = Now() + seconds;
  if (deadline_ > 0 && deadline_ <= until) {
    Wait();  // the wall deadline comes first: Wait() enforces it
    return true;
  }
  while (!Reap(false)) {
    const double left = until - Now();
    if (left <= 0) return false;
    AwaitExitEvent(left);
  }
  Finish(false);
  return true;
}

ExitInfo SandboxedProcess::Kill() {
  if (finished_) return info_;
  KillTree();
  Reap(true);
  return Finish(false);
}

std::unique_ptr<SandboxedProcess> SpawnSandboxed(const SandboxPolicy& policy,
                                                 const std::vector<std::string>& argv,
                                                 std::string* error) {
  auto fail = [&](const std::string& why) -> std::unique_ptr<SandboxedProcess> {
    if (error) *error = why;
    return nullptr;
  };
  ChildPlanStore store;
  std::string why;
  if (!PlanChild(policy, argv, &store, &why)) return fail(why);
  const ChildPlan* plan = &store.plan;

  // --- Descriptors. All O_CLOEXEC; the child moves its ends into place.
  int in_pipe[2] = {-1, -1}, out_pipe[2] = {-1, -1}, log_pipe[2] = {-1, -1},
      err_pipe[2] = {-1, -1}, to_helper[2] = {-1, -1}, from_helper[2] = {-1, -1};
  int dev_null = -1, exe_fd = -1;
  auto close_all = [&]() {
    for (int* p : {in_pipe, out_pipe, log_pipe, err_pipe, to_helper, from_helper}) {
      CloseFd(&p[0]);
      CloseFd(&p[1]);
    }
    CloseFd(&dev_null);
    CloseFd(&exe_fd);
  };
  for (int* p : {in_pipe, out_pipe, log_pipe, err_pipe, to_helper, from_helper}) {
    if (pipe2(p, O_CLOEXEC) != 0) {
      std::string why = std::string("pipe2: ") + strerror(errno);
      close_all();
      return fail(why);
    }
  }
  // Requests and replies carry tensors of up to GBs: a 1 MiB pipe moves
  // them in 16x fewer wake-ups than the default 64 KiB (about 2.5x the
  // throughput measured on the CI machine). Best effort: a smaller
  // pipe-max-size leaves the default.
  for (int* p : {in_pipe, out_pipe}) fcntl(p[1], F_SETPIPE_SZ, 1 << 20);
  dev_null = open("/dev/null", O_RDWR | O_CLOEXEC);
  exe_fd = open(argv[0].c_str(), O_PATH | O_CLOEXEC);
  if (dev_null < 0 || exe_fd < 0) {
    std::string why = std::string("open ") + (dev_null < 0 ? "/dev/null" : argv[0]) + ": " +
                      strerror(errno);
    close_all();
    return fail(why);
  }
  int efd = eventfd(0, EFD_CLOEXEC);
  if (efd < 0) {
    std::string why = std::string("eventfd: ") + strerror(errno);
    close_all();
    return fail(why);
  }

  std::unique_ptr<SandboxedProcess> proc(new SandboxedProcess());
  proc->start_ = Now();
  proc->deadline_ =
      policy.wall_timeout_seconds > 0 ? proc->start_ + policy.wall_timeout_seconds : 0;
  proc->address_space_bytes_ = policy.address_space_bytes;
  proc->cpu_limit_seconds_ = policy.cpu_seconds;
  proc->isolated_ = policy.isolate_namespaces;

  pid_t pid = fork();
  if (pid < 0) {
    std::string why = std::string("fork: ") + strerror(errno);
    close_all();
    close(efd);
    return fail(why);
  }
  if (pid == 0) {
    // ----- child: move descriptors into place (0-4 plus 5-8 for setup).
    const int wanted[] = {dev_null,    log_pipe[1],    log_pipe[1], in_pipe[0],
                          out_pipe[1], err_pipe[1],    to_helper[0], from_helper[1],
                          exe_fd};
    int high[9];
    for (int i = 0; i < 9; ++i) {
      high[i] = fcntl(wanted[i], F_DUPFD_CLOEXEC, 64);
      if (high[i] < 0) {
        const char msg[] = "spawn: moving descriptors failed";
        ssize_t ignored = write(err_pipe[1], msg, sizeof(msg) - 1);
        (void)ignored;
        _exit(kSetupExitCode);
      }
    }
    for (int i = 0; i < 9; ++i) {
      // 0-4 survive execve; 5-8 are close-on-exec.
      if (dup3(high[i], i, i < 5 ? 0 : O_CLOEXEC) < 0) {
        const char msg[] = "spawn: moving descriptors failed";
        ssize_t ignored = write(high[5], msg, sizeof(msg) - 1);
        (void)ignored;
        _exit(kSetupExitCode);
      }
    }
    CloseFrom(kFirstFreeFd);
    RunHelper(*plan);
  }

  // ----- parent
  proc->pid_ = pid;
  proc->pidfd_ = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  proc->to_child_ = in_pipe[1];
  in_pipe[1] = -1;
  proc->from_child_ = out_pipe[0];
  out_pipe[0] = -1;
  fcntl(proc->to_child_, F_SETFL, fcntl(proc->to_child_, F_GETFL) | O_NONBLOCK);
  fcntl(proc->from_child_, F_SETFL, fcntl(proc->from_child_, F_GETFL) | O_NONBLOCK);
  auto log = std::make_unique<SandboxedProcess::LogCollector>();
  log->fd = log_pipe[0];
  log_pipe[0] = -1;
  log->stop_fd = efd;
  log->max = policy.max_log_bytes;
  int helper_in = to_helper[1];
  to_helper[1] = -1;
  int helper_out = from_helper[0];
  from_helper[0] = -1;
  int err_read = err_pipe[0];
  err_pipe[0] = -1;
  close_all();  // the child's ends
  try {
    log->thread = std::thread([p = log.get()] { p->Run(); });
  } catch (const std::exception& e) {
    proc->setup_error_ = std::string("log thread: ") + e.what();
  }
  proc->log_ = std::move(log);

  const double setup_deadline = Now() + 30.0;
  if (policy.isolate_namespaces && proc->setup_error_.empty()) {
    MapChildIds(pid, *plan, helper_in, helper_out, &proc->setup_error_);
  }
  close(helper_in);
  close(helper_out);
  std::string setup_text;
  if (!ReadUntilEof(err_read, setup_deadline, &setup_text) && proc->setup_error_.empty()) {
    proc->setup_error_ = "sandbox setup did not finish within 30 s";
  }
  close(err_read);
  if (!setup_text.empty() && proc->setup_error_.empty()) proc->setup_error_ = setup_text;
  if (!proc->setup_error_.empty()) {
    proc->KillTree();
    proc->Reap(true);
    proc->Finish(false);
  }
  return proc;
}

bool NamespacesAvailable(std::string* why) {
  static std::once_flag once;
  static bool available = false;
  static std::string reason;
  std::call_once(once, [] {
    SandboxPolicy policy;
    policy.wall_timeout_seconds = 10;
    std::string error;
    auto p = SpawnSandboxed(policy, {"/bin/true"}, &error);
    if (!p) {
      reason = error;
      return;
    }
    ExitInfo info = p->Wait();
    available = info.kind == ExitInfo::kExited && info.exit_code == 0;
    if (!available) reason = info.Describe();
  });
  if (!available && why) *why = reason;
  return available;
}

}  // namespace crl::runner
