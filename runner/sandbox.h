// runner/sandbox.h — spawn a command in a sandbox and supervise it.
//
// Process tree (isolate_namespaces = true):
//
//   caller         writes the helper's uid/gid maps (as root: "0 0 1" plus
//    │             run_as_uid mapped to itself; else its own uid only)
//    └─ helper     setsid, PR_SET_PDEATHSIG(SIGKILL), drops supplementary
//        │         groups, unshare(user|mnt|pid|net|ipc|uts), not dumpable
//        └─ init   PID 1 of the new PID namespace: builds the filesystem
//            │     view, forwards the payload's wait status to `helper`,
//            │     reaps orphans; ignores signals sent from inside the ns
//            └─ payload  PID 2: rlimits, capability drop, setresgid/uid to
//                        run_as_gid/uid, no_new_privs, seccomp, execve
//
// `helper` exits with the payload's status (exit code, or re-raises its
// signal), so the caller sees the payload's fate as the child's. Killing the
// helper (timeout, Kill(), caller death) kills init via PDEATHSIG and the
// kernel then kills everything in the PID namespace. The payload is PID 2
// rather than 1 so that abort()/raise() and kill(-1, ...) behave normally
// (kill(-1) inside the namespace reaches nothing that matters).
//
// Filesystem view built by init (every step failing is a setup failure):
//   * every mount is made private, then every reachable mount point is
//     remounted read-only (MS_REMOUNT|MS_BIND|MS_RDONLY, keeping the locked
//     nosuid/nodev/noexec/atime flags);
//   * /tmp: a fresh tmpfs of tmpfs_bytes (mode 1777);
//   * /dev: a fresh tmpfs, read-only, holding only null, zero, full, random,
//     urandom, the extra_device_nodes, fd/stdin/stdout/stderr symlinks and a
//     writable /dev/shm tmpfs — a host runner sees no GPU;
//   * /proc: a new procfs for the PID namespace (only sandbox processes);
//     writable (the CUDA driver needs that) except /proc/sys, sysrq-trigger,
//     irq, bus and fs, which are bound read-only; kcore, keys, timer_list,
//     sched_debug, latency_stats and kallsyms are masked with /dev/null;
//   * /sys: a fresh read-only sysfs (the network namespace's view: only lo)
//     when the kernel allows it, else the host's, read-only;
//   * masked_paths: covered by an empty read-only tmpfs (default /run: a
//     read-only view still lets processes connect() to unix sockets there);
//   * readonly_paths / workdir / writable_paths: bound at the same path
//     (read-only / read-write / read-write); useful for paths under /tmp,
//     which the fresh tmpfs hides.
// Without isolation none of this happens (no namespaces, host filesystem).
//
// The payload: fds 0 = /dev/null, 1 and 2 = the log pipe (the caller keeps
// the first max_log_bytes, drained by a thread so the child never blocks),
// 3 = protocol pipe caller->child (read end), 4 = protocol pipe
// child->caller (write end); every other fd closed. rlimits CPU, AS, FSIZE,
// NOFILE, NPROC, CORE=0; empty capability bounding set, no ambient or
// inheritable caps, no_new_privs; optional seccomp profile; chdir(cwd);
// execve of argv with exactly policy.env.
//
// Setup failures in any of the three processes are written as
// "stage: message" to a CLOEXEC pipe, read by SpawnSandboxed() before it
// returns; Wait() then reports kSetupFailed with that text. That is an
// infrastructure error, never a verdict about the candidate.
//
// Stopping: Kill() and timeouts send SIGTERM to the helper, which SIGKILLs
// init and reaps it (the PID namespace dies with init), then exits; SIGKILL to
// the whole process group follows if it has not exited within 2 s. So no
// process is orphaned to the host's PID 1 (which, in a container, may never
// reap it).
//
// Caveats:
//   * PR_SET_PDEATHSIG fires when the THREAD that called SpawnSandboxed()
//     exits: spawn from long-lived threads.
//   * Callers should ignore SIGPIPE (writes to a dead child's pipe).
//   * When the caller is root, the sandbox runs as run_as_uid/run_as_gid
//     (default 65534): the workdir must be writable by that uid, and every
//     path the sandbox uses (binaries, libraries, workdir) must be reachable
//     (searchable parent directories) by it.
//
// Thread-safety: SpawnSandboxed may be called from several threads at once.
// A SandboxedProcess must be used by one thread at a time.
#ifndef CRL_RUNNER_SANDBOX_H_
#define CRL_RUNNER_SANDBOX_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runner/process_group.h"
#include "runner/seccomp.h"

namespace crl::runner {

struct SandboxPolicy {
  // Wall-clock limit counted from spawn; Wait() SIGKILLs the whole tree when
  // it passes and reports kTimedOut. <= 0: none.
  double wall_timeout_seconds = 60;
  // RLIMIT_CPU of the payload, seconds (soft: SIGXCPU, hard = soft + 1:
  // SIGKILL). 0 = unlimited.
  uint64_t cpu_seconds = 60;
  // RLIMIT_AS of the payload. 0 = unlimited — required for CUDA runners (the
  // driver reserves huge virtual ranges); set it for host runners and
  // compilers.
  uint64_t address_space_bytes = 0;
  // RLIMIT_FSIZE: largest file the payload may write (SIGXFSZ past it).
  uint64_t file_size_bytes = 256ull << 20;
  // RLIMIT_NOFILE.
  uint64_t open_files = 256;
  // RLIMIT_NPROC. Counts every process and thread of the sandbox's real uid
  // on the host (all concurrent sandboxes run as run_as_uid), so size it for
  // the worker's concurrency. Not enforced for uid 0. Fork bombs in runners
  // are stopped by seccomp (kRunner forbids fork); this bounds compilers.
  uint64_t max_processes = 1024;
  // Size of the private /tmp tmpfs (and of /dev/shm) — isolation only.
  uint64_t tmpfs_bytes = 256ull << 20;
  // Seccomp profile installed right before execve(). kRunner forbids execve
  // and is rejected here: crl-runner installs it itself after initialising
  // its backend. kCompiler allows exec.
  SeccompProfile seccomp = SeccompProfile::kNone;
  // Namespaces + filesystem view (see above). When namespaces cannot be
  // created the spawn fails (kSetupFailed); it never silently degrades.
  // false: only process group, rlimits, fds, env, caps and seccomp.
  bool isolate_namespaces = true;
  // Identity of the sandbox when the caller's euid is 0 (ignored otherwise:
  // an unprivileged caller runs the sandbox as itself). -1 keeps uid/gid 0,
  // which is NOT recommended: the sandbox is then the real root for
  // permission checks (it can read root-only files on the read-only view).
  int64_t run_as_uid = 65534;
  int64_t run_as_gid = 65534;
  // The WHOLE environment of the payload ("KEY=VALUE"); nothing is inherited.
  std::vector<std::string> env = {"PATH=/usr/local/bin:/usr/bin:/bin",
                                  "HOME=/tmp", "LANG=C", "LC_ALL=C"};
  // Device nodes bound into the fresh /dev at the same path (e.g.
  // /dev/nvidia0, /dev/nvidiactl, /dev/nvidia-uvm, /dev/nvidia-uvm-tools).
  // A missing node is a setup failure.
  std::vector<std::string> extra_device_nodes;
  // A host directory visible read-write at the same path ("" = none).
  std::string workdir;
  // More host paths visible read-write / read-only at the same path.
  std::vector<std::string> writable_paths;
  std::vector<std::string> readonly_paths;
  // Paths hidden: directories under an empty read-only tmpfs, files under a
  // read-only bind of /dev/null (missing ones are skipped).
  std::vector<std::string> masked_paths = {"/run"};
  // Directory to chdir() into ("" = workdir if set, else /tmp).
  std::string cwd;
  // Bytes of stdout+stderr kept (the rest is drained and dropped).
  uint64_t max_log_bytes = 64 << 10;
};

struct ExitInfo {
  enum Kind {
    kExited,       // exit_code is valid
    kSignaled,     // signal is valid
    kTimedOut,     // wall timeout; the whole tree was SIGKILLed
    kSetupFailed,  // sandbox setup failed before execve: see setup_error
  };
  Kind kind = kExited;
  int exit_code = 0;
  int signal = 0;
  bool seccomp_violation = false;    // killed by SIGSYS
  bool cpu_limit_hit = false;        // SIGXCPU, or SIGKILL at cpu_seconds
  bool file_size_limit_hit = false;  // SIGXFSZ
  // Heuristic: an address-space limit was set, the process failed, and the
  // log mentions an allocation failure (bad_alloc, "out of memory", ENOMEM).
  bool memory_limit_hint = false;
  double wall_seconds = 0;
  double cpu_seconds = 0;   // user+system of the whole tree
  std::string setup_error;  // "stage: message" for kSetupFailed
  std::string log;          // captured stdout+stderr (first max_log_bytes)
  bool log_truncated = false;

  // One line: "exited 0", "signal 11 (SIGSEGV)", "timed out after 2.0 s",
  // "seccomp violation (SIGSYS)", "setup failed: ...".
  std::string Describe() const;
};

// A sandboxed process. The destructor kills and reaps the tree if needed and
// closes every fd.
class SandboxedProcess {
 public:
  ~SandboxedProcess();
  SandboxedProcess(const SandboxedProcess&) = delete;
  SandboxedProcess& operator=(const SandboxedProcess&) = delete;

  // pid of the direct child (session/process-group leader). -1 after a
  // setup failure that left nothing running.
  pid_t pid() const { return pid_; }
  // Write end of the payload's fd 3 (O_NONBLOCK|O_CLOEXEC); -1 once closed.
  int to_child() const { return to_child_; }
  // Read end of the payload's fd 4 (O_NONBLOCK|O_CLOEXEC); -1 once closed.
  int from_child() const { return from_child_; }
  // Closes to_child: the payload reads EOF on fd 3.
  void CloseToChild();

  // True when setup failed (the payload never started).
  bool setup_failed() const { return !setup_error_.empty(); }

  // Waits for the child to exit, at most until the policy's wall deadline or
  // `timeout_seconds` from now (if >= 0), whichever comes first; SIGKILLs
  // the tree on the wall deadline (kTimedOut) — a shorter timeout_seconds
  // that expires first also kills and reports kTimedOut. Always reaps and
  // collects the log. Repeated calls return the same ExitInfo.
  ExitInfo Wait(double timeout_seconds = -1);

  // Waits up to `seconds` for the child to exit without killing it (the
  // policy's wall deadline still applies, as in Wait()). True when it has
  // finished; Wait() then returns its ExitInfo at once. Lets a caller check
  // for cancellation between slices.
  bool WaitFor(double seconds);

  // SIGKILLs the tree and reaps it; returns the ExitInfo (kSignaled SIGKILL
  // unless it had already exited). Idempotent.
  ExitInfo Kill();

  // Non-blocking: true while the child has not exited.
  bool Running();

  // Starts the wall clock again: the deadline becomes `limit_seconds` from
  // now (0: none) and ExitInfo::wall_seconds counts from now. For a process
  // started ahead of its use (a warm pool) and handed to a request later.
  void RestartWallClock(double limit_seconds);

  // Moves every thread of the process group (the payload and whatever it
  // started) onto CPU `cpu`; threads made later inherit it. False when the
  // process has ended or nothing could be moved.
  bool PinTo(int cpu);

  // Stops (SIGSTOP) or continues (SIGCONT) every process of the group: a
  // stopped payload runs nothing, on the CPU or by launching device work,
  // until continued. Kill() and the wall deadline still end it (at once:
  // SIGKILL to the whole group, init of its namespace included). False when
  // the process has ended.
  bool Freeze(bool frozen);
  bool frozen() const { return frozen_; }

  // The payload's memory, read or written from outside (process_group.h):
  // meant for a stopped payload, which runs none of its code meanwhile.
  // False with *error when a byte is not accessible or the process ended.
  bool ReadPayloadMemory(const std::vector<MemoryRange>& ranges, std::string* out, std::string* error);
  // After Freeze(true): waits up to `timeout_seconds` until every thread of
  // the payload is stopped. False when one still runs (or it ended).
  bool WaitPayloadStopped(double timeout_seconds);
  bool WritePayloadMemory(uint64_t address, const std::string& bytes, std::string* error);

  // The log captured so far.
  std::string LogSoFar() const;

 private:
  friend std::unique_ptr<SandboxedProcess> SpawnSandboxed(
      const SandboxPolicy&, const std::vector<std::string>&, std::string*);
  struct LogCollector;
  SandboxedProcess();
  bool Reap(bool block);
  // The payload's pid (found once), or -1 with *error set (may be null).
  pid_t Payload(std::string* error);
  // Blocks until the child may have exited (pidfd readable) or for at most
  // min(seconds, 1) s.
  void AwaitExitEvent(double seconds);
  void KillTree();
  ExitInfo Finish(bool timed_out);

  pid_t pid_ = -1;
  int pidfd_ = -1;
  int to_child_ = -1;
  int from_child_ = -1;
  bool reaped_ = false;
  int wait_status_ = 0;
  double cpu_seconds_ = 0;
  double start_ = 0;     // CLOCK_MONOTONIC seconds
  double deadline_ = 0;  // 0 = none
  double end_ = 0;
  uint64_t address_space_bytes_ = 0;
  uint64_t cpu_limit_seconds_ = 0;
  bool isolated_ = false;
  bool frozen_ = false;
  pid_t payload_pid_ = -1;  // found on first use (ReadPayloadMemory)
  std::string setup_error_;
  std::unique_ptr<LogCollector> log_;
  bool finished_ = false;
  ExitInfo info_;
};

// Spawns argv (argv[0] an absolute path; it is opened before the filesystem
// view is built, so it may live under the host's /tmp) under `policy`.
// Blocks until the payload has exec'd or setup failed (a few milliseconds).
// Returns nullptr only when the caller side failed (bad policy, pipe, fork,
// thread), with *error set; setup failures inside the child are reported by
// setup_failed() and Wait().
std::unique_ptr<SandboxedProcess> SpawnSandboxed(
    const SandboxPolicy& policy, const std::vector<std::string>& argv,
    std::string* error);

// True if the sandbox's namespaces can be created here (spawns /bin/true
// once with a default policy and caches the answer). Thread-safe.
bool NamespacesAvailable(std::string* why = nullptr);

}  // namespace crl::runner

#endif  // CRL_RUNNER_SANDBOX_H_
