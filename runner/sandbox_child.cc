// runner/sandbox_child.cc: see sandbox_child.h (async-signal-safe only).
#include "runner/sandbox_child.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstring>

namespace crl::runner::sandbox_child {
namespace {

// ---------------------------------------------------------------------------
// Child side (async-signal-safe only).

size_t StrLen(const char* s) {
  size_t n = 0;
  while (s[n] != '\0') ++n;
  return n;
}

// Appends src to dst (capacity cap, always NUL-terminated).
void Append(char* dst, size_t cap, const char* src) {
  size_t n = StrLen(dst);
  while (*src != '\0' && n + 1 < cap) dst[n++] = *src++;
  dst[n] = '\0';
}

[[noreturn]] void ChildFail(const char* stage, const char* detail, int err) {
  char msg[1024];
  msg[0] = '\0';
  Append(msg, sizeof(msg), stage);
  if (detail != nullptr && detail[0] != '\0') {
    Append(msg, sizeof(msg), " ");
    Append(msg, sizeof(msg), detail);
  }
  if (err != 0) {
    Append(msg, sizeof(msg), ": ");
    const char* desc = strerrordesc_np(err);
    Append(msg, sizeof(msg), desc != nullptr ? desc : "unknown error");
  }
  ssize_t ignored = write(kErrFd, msg, StrLen(msg));
  (void)ignored;
  _exit(kSetupExitCode);
}

}  // namespace

void CloseFrom(int first) {
  if (syscall(SYS_close_range, static_cast<unsigned>(first), ~0u, 0u) == 0) return;
  struct rlimit rl;
  rlim_t max = 65536;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) max = rl.rlim_cur;
  for (rlim_t fd = first; fd < max; ++fd) close(static_cast<int>(fd));
}

namespace {

// Default dispositions; only `blocked` (if non-zero) stays blocked.
void ResetSignals(int blocked) {
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    signal(sig, SIG_DFL);  // EINVAL for the RT signals glibc reserves: fine
  }
  sigset_t mask;
  sigemptyset(&mask);
  if (blocked != 0) sigaddset(&mask, blocked);
  sigprocmask(SIG_SETMASK, &mask, nullptr);
}

// The helper's init, for its SIGTERM handler: the caller stops a sandbox by
// sending SIGTERM to the helper, which kills init (and so the namespace) and
// reaps it before exiting, so no orphan is left to the host's PID 1.
volatile pid_t g_init_pid = 0;

void HelperTermHandler(int) {
  if (g_init_pid > 0) kill(g_init_pid, SIGKILL);
}

bool ReadExact(int fd, void* buf, size_t len) {
  char* p = static_cast<char*>(buf);
  while (len > 0) {
    ssize_t n = read(fd, p, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    len -= static_cast<size_t>(n);
  }
  return true;
}

void WriteExact(int fd, const void* buf, size_t len) {
  const char* p = static_cast<const char*>(buf);
  while (len > 0) {
    ssize_t n = write(fd, p, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    p += n;
    len -= static_cast<size_t>(n);
  }
}

// The per-mount flags a bind remount must keep (the kernel refuses to clear
// flags that were locked when the mount namespace was created).
unsigned long KeptFlags(const char* path) {
  struct statvfs sv;
  if (statvfs(path, &sv) != 0) return 0;
  unsigned long f = 0;
  if (sv.f_flag & ST_NOSUID) f |= MS_NOSUID;
  if (sv.f_flag & ST_NODEV) f |= MS_NODEV;
  if (sv.f_flag & ST_NOEXEC) f |= MS_NOEXEC;
  if (sv.f_flag & ST_NOATIME) f |= MS_NOATIME;
  if (sv.f_flag & ST_NODIRATIME) f |= MS_NODIRATIME;
  if (sv.f_flag & ST_RELATIME) f |= MS_RELATIME;
  if (!(sv.f_flag & (ST_NOATIME | ST_RELATIME))) f |= MS_STRICTATIME;
  return f;
}

// Decodes the octal escapes (\040 etc.) of a mountinfo field in place.
void Unescape(char* s) {
  char* out = s;
  for (char* in = s; *in != '\0';) {
    if (in[0] == '\\' && in[1] >= '0' && in[1] <= '7' && in[2] >= '0' && in[2] <= '7' &&
        in[3] >= '0' && in[3] <= '7') {
      *out++ = static_cast<char>((in[1] - '0') * 64 + (in[2] - '0') * 8 + (in[3] - '0'));
      in += 4;
    } else {
      *out++ = *in++;
    }
  }
  *out = '\0';
}

// Remounts every mount point listed in /proc/self/mountinfo read-only.
void RemountAllReadOnly(const ChildPlan& plan) {
  int fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
  if (fd < 0) ChildFail("open /proc/self/mountinfo", nullptr, errno);
  size_t used = 0;
  for (;;) {
    if (used + 1 >= plan.mountinfo_size) ChildFail("read mountinfo", "(too large)", 0);
    ssize_t n = read(fd, plan.mountinfo + used, plan.mountinfo_size - used - 1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) ChildFail("read mountinfo", nullptr, errno);
    if (n == 0) break;
    used += static_cast<size_t>(n);
  }
  close(fd);
  plan.mountinfo[used] = '\0';
  char* line = plan.mountinfo;
  while (*line != '\0') {
    char* end = line;
    while (*end != '\0' && *end != '\n') ++end;
    bool last = *end == '\0';
    *end = '\0';
    // Fields: id parent major:minor root mountpoint ...
    char* field = line;
    for (int i = 0; i < 4 && field != nullptr; ++i) {
      field = strchr(field, ' ');
      if (field != nullptr) ++field;
    }
    if (field != nullptr) {
      char* sp = strchr(field, ' ');
      if (sp != nullptr) *sp = '\0';
      Unescape(field);
      unsigned long flags = MS_REMOUNT | MS_BIND | MS_RDONLY | KeptFlags(field);
      if (mount(nullptr, field, nullptr, flags, nullptr) != 0) {
        // Unreachable mount points (hidden below another mount, or behind a
        // directory we may not search) are equally unreachable for the
        // payload. Anything else is a hole in the read-only view.
        if (errno != ENOENT && errno != EACCES && errno != ENOTDIR && errno != ELOOP &&
            errno != EINVAL) {
          ChildFail("remount read-only", field, errno);
        }
        if (errno == EINVAL && strcmp(field, "/") == 0) {
          ChildFail("remount read-only", field, errno);
        }
      }
    }
    if (last) break;
    line = end + 1;
  }
}

// mkdir -p of the parents of `path` (and of path itself when `self`).
void MakeDirs(const char* path, bool self) {
  char buf[4096];
  size_t n = StrLen(path);
  if (n >= sizeof(buf)) ChildFail("mkdir", path, ENAMETOOLONG);
  for (size_t i = 1; i <= n; ++i) {
    if (i == n ? self : path[i] == '/') {
      memcpy(buf, path, i);
      buf[i] = '\0';
      if (mkdir(buf, 0755) != 0 && errno != EEXIST) ChildFail("mkdir", buf, errno);
    }
  }
}

void FdPath(int fd, char* buf, size_t cap) {
  buf[0] = '\0';
  Append(buf, cap, "/proc/self/fd/");
  char digits[16];
  int len = 0;
  unsigned v = static_cast<unsigned>(fd);
  do {
    digits[len++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  char num[16];
  for (int i = 0; i < len; ++i) num[i] = digits[len - 1 - i];
  num[len] = '\0';
  Append(buf, cap, num);
}

// Binds the O_PATH fd `b.fd` at b.path, creating the mount point when it
// does not exist (inside a tmpfs we mounted), and sets ro/rw.
void BindAt(const BindPlan& b) {
  struct stat st;
  if (fstat(b.fd, &st) != 0) ChildFail("fstat", b.path, errno);
  struct stat target;
  if (lstat(b.path, &target) != 0) {
    MakeDirs(b.path, S_ISDIR(st.st_mode));
    if (!S_ISDIR(st.st_mode)) {
      int f = open(b.path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
      if (f < 0) ChildFail("create mount point", b.path, errno);
      close(f);
    }
  }
  char src[64];
  FdPath(b.fd, src, sizeof(src));
  if (mount(src, b.path, nullptr, MS_BIND | MS_REC, nullptr) != 0) {
    ChildFail("bind", b.path, errno);
  }
  if (b.kind == BindPlan::kDevice) return;  // keep the node's own flags
  unsigned long flags = MS_REMOUNT | MS_BIND | KeptFlags(b.path) | MS_NOSUID;
  if (b.kind == BindPlan::kReadOnly) flags |= MS_RDONLY;
  if (mount(nullptr, b.path, nullptr, flags, nullptr) != 0) {
    ChildFail(b.kind == BindPlan::kReadOnly ? "remount read-only" : "remount read-write",
              b.path, errno);
  }
}

// Builds the filesystem view (runs as PID 1 of the new namespaces).
void BuildFilesystem(const ChildPlan& plan) {
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    ChildFail("make mounts private", nullptr, errno);
  }
  // Open everything we will bind while the host view is still in place.
  for (size_t i = 0; i < plan.num_binds; ++i) {
    plan.binds[i].fd = open(plan.binds[i].path, O_PATH | O_CLOEXEC);
    if (plan.binds[i].fd < 0) ChildFail("open", plan.binds[i].path, errno);
  }
  RemountAllReadOnly(plan);
  if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, plan.tmp_options) != 0) {
    ChildFail("mount tmpfs", "/tmp", errno);
  }
  // /dev: fresh tmpfs with only the nodes we bind.
  if (mount("tmpfs", "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "size=1m,mode=755") != 0) {
    ChildFail("mount tmpfs", "/dev", errno);
  }
  for (size_t i = 0; i < plan.num_binds; ++i) {
    if (plan.binds[i].kind == BindPlan::kDevice) BindAt(plan.binds[i]);
  }
  const char* const kLinks[][2] = {{"/proc/self/fd", "/dev/fd"},
                                   {"/proc/self/fd/0", "/dev/stdin"},
                                   {"/proc/self/fd/1", "/dev/stdout"},
                                   {"/proc/self/fd/2", "/dev/stderr"}};
  for (const auto& l : kLinks) {
    if (symlink(l[0], l[1]) != 0) ChildFail("symlink", l[1], errno);
  }
  MakeDirs("/dev/shm", true);
  if (mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
            plan.shm_options) != 0) {
    ChildFail("mount tmpfs", "/dev/shm", errno);
  }
  if (mount(nullptr, "/dev", nullptr, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NOEXEC,
            nullptr) != 0) {
    ChildFail("remount read-only", "/dev", errno);
  }
  for (size_t i = 0; i < plan.num_masks; ++i) {
    struct stat st;
    if (stat(plan.masks[i], &st) != 0) continue;
    if (!S_ISDIR(st.st_mode)) {
      // A file (a token, a key): the empty /dev/null in its place, read-only.
      if (mount("/dev/null", plan.masks[i], nullptr, MS_BIND, nullptr) != 0 ||
          mount(nullptr, plan.masks[i], nullptr,
                MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NOEXEC,  // no NODEV: it is one
                nullptr) != 0) {
        ChildFail("mask file", plan.masks[i], errno);
      }
      continue;
    }
    if (mount("tmpfs", plan.masks[i], "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
              "size=4k,mode=755") != 0) {
      ChildFail("mask", plan.masks[i], errno);
    }
  }
  for (size_t i = 0; i < plan.num_binds; ++i) {
    if (plan.binds[i].kind != BindPlan::kDevice) BindAt(plan.binds[i]);
  }
  for (size_t i = 0; i < plan.num_binds; ++i) CloseFd(&plan.binds[i].fd);
  // /proc last (the binds above go through the old /proc/self/fd). It must
  // be writable: the CUDA driver fails (cudaErrorOperatingSystem) under a
  // read-only /proc. The kernel-wide knobs in it are made read-only and the
  // sensitive files masked, as container runtimes do — this matters when the
  // sandbox keeps uid 0, which passes the permission checks of /proc/sys.
  if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
    ChildFail("mount proc", "/proc", errno);
  }
  const char* const kProcReadOnly[] = {"/proc/sys", "/proc/sysrq-trigger", "/proc/irq",
                                       "/proc/bus", "/proc/fs"};
  for (const char* path : kProcReadOnly) {
    struct stat st;
    if (lstat(path, &st) != 0) continue;
    if (mount(path, path, nullptr, MS_BIND | MS_REC, nullptr) != 0 ||
        mount(nullptr, path, nullptr,
              MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
              nullptr) != 0) {
      ChildFail("remount read-only", path, errno);
    }
  }
  const char* const kProcMasked[] = {"/proc/kcore", "/proc/keys", "/proc/timer_list",
                                     "/proc/sched_debug", "/proc/latency_stats",
                                     "/proc/kallsyms"};
  for (const char* path : kProcMasked) {
    struct stat st;
    if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (mount("/dev/null", path, nullptr, MS_BIND, nullptr) != 0) {
      ChildFail("mask", path, errno);
    }
  }
  // A fresh sysfs shows only this network namespace's devices (lo). Older
  // kernels or container hosts may refuse it: the host /sys is then left,
  // already read-only.
  mount("sysfs", "/sys", "sysfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr);
  const char kHost[] = "crl-sandbox";
  sethostname(kHost, sizeof(kHost) - 1);
}

// Final steps of the payload, then execve. Never returns.
[[noreturn]] void ExecPayload(const ChildPlan& plan) {
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) ChildFail("pdeathsig", nullptr, errno);
  ResetSignals(0);
  struct Limit {
    int resource;
    rlim_t value;
    const char* name;
  };
  const Limit limits[] = {{RLIMIT_CPU, plan.cpu, "RLIMIT_CPU"},
                          {RLIMIT_AS, plan.as, "RLIMIT_AS"},
                          {RLIMIT_FSIZE, plan.fsize, "RLIMIT_FSIZE"},
                          {RLIMIT_NOFILE, plan.nofile, "RLIMIT_NOFILE"},
                          {RLIMIT_NPROC, plan.nproc, "RLIMIT_NPROC"},
                          {RLIMIT_CORE, 0, "RLIMIT_CORE"}};
  for (const Limit& l : limits) {
    struct rlimit rl;
    if (l.resource == RLIMIT_CORE) {
      rl.rlim_cur = rl.rlim_max = 0;
    } else if (l.value == 0) {
      continue;  // unlimited: keep what we have
    } else if (l.resource == RLIMIT_CPU) {
      rl.rlim_cur = l.value;
      rl.rlim_max = l.value + 1;  // SIGXCPU first, SIGKILL a second later
    } else {
      rl.rlim_cur = rl.rlim_max = l.value;
    }
    if (setrlimit(l.resource, &rl) != 0) ChildFail("setrlimit", l.name, errno);
  }
  // Capabilities: empty bounding set, no ambient caps, then the identity.
  for (int cap = 0; cap <= 63; ++cap) {
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL && errno != EPERM) {
      ChildFail("drop capability bounding set", nullptr, errno);
    }
  }
  prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  if (plan.change_ids) {
    if (!plan.isolate && setgroups(0, nullptr) != 0) ChildFail("setgroups", nullptr, errno);
    if (setresgid(plan.gid, plan.gid, plan.gid) != 0) ChildFail("setresgid", nullptr, errno);
    if (setresuid(plan.uid, plan.uid, plan.uid) != 0) ChildFail("setresuid", nullptr, errno);
  }
  {
    struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2];
    memset(data, 0, sizeof(data));
    if (syscall(SYS_capset, &hdr, data) != 0) ChildFail("capset", nullptr, errno);
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) ChildFail("no_new_privs", nullptr, errno);
  if (chdir(plan.cwd) != 0) ChildFail("chdir", plan.cwd, errno);
  if (plan.seccomp_len > 0) {
    int rc = InstallSeccompProgram(plan.seccomp, plan.seccomp_len, false);
    if (rc != 0) ChildFail("seccomp", nullptr, rc);
  }
  syscall(SYS_execveat, kExeFd, "", plan.argv, plan.envp, AT_EMPTY_PATH);
  ChildFail("execve", plan.argv[0], errno);
}

// PID 1 of the new PID namespace: builds the view, runs the payload as PID
// 2, forwards its wait status on status_fd. Never returns.
[[noreturn]] void RunInit(const ChildPlan& plan, int status_fd) {
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) ChildFail("pdeathsig", nullptr, errno);
  BuildFilesystem(plan);
  pid_t payload = fork();
  if (payload < 0) ChildFail("fork payload", nullptr, errno);
  if (payload == 0) {
    close(status_fd);
    ExecPayload(plan);
  }
  // Init keeps nothing the payload's peers could wait on.
  for (int fd = 0; fd < kFirstFreeFd; ++fd) {
    if (fd != status_fd) close(fd);
  }
  for (;;) {
    int st = 0;
    pid_t p = waitpid(-1, &st, 0);
    if (p < 0 && errno == EINTR) continue;
    if (p < 0) _exit(kSetupExitCode);
    if (p == payload) {
      WriteExact(status_fd, &st, sizeof(st));
      _exit(0);  // the kernel kills whatever is left in the namespace
    }
  }
}

}  // namespace

// First child: session, namespaces, then init; forwards the payload's fate.
[[noreturn]] void RunHelper(const ChildPlan& plan) {
  if (setsid() < 0) ChildFail("setsid", nullptr, errno);
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) ChildFail("pdeathsig", nullptr, errno);
  if (getppid() != plan.parent_pid) ChildFail("spawn", "(the caller exited)", 0);
  // SIGTERM stays blocked until init exists (see HelperTermHandler).
  ResetSignals(plan.isolate ? SIGTERM : 0);
  if (!plan.isolate) ExecPayload(plan);

  if (geteuid() == 0) setgroups(0, nullptr);  // before setgroups is denied
  if (unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC |
              CLONE_NEWUTS) != 0) {
    ChildFail("unshare namespaces", nullptr, errno);
  }
  // The parent writes our uid/gid maps (it may map ids we cannot).
  char c = 'R';
  WriteExact(kSyncWriteFd, &c, 1);
  if (!ReadExact(kSyncReadFd, &c, 1) || c != 'M') _exit(kSetupExitCode);  // caller reports
  close(kSyncReadFd);
  close(kSyncWriteFd);
  // Nothing in the sandbox may read this process or init (copies of the
  // caller's memory) through /proc: not dumpable (after the caller wrote our
  // id maps, which needs /proc/<pid> owned by us). Inherited by init; the
  // payload's execve resets it.
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);

  int status_pipe[2];
  if (pipe2(status_pipe, O_CLOEXEC) != 0) ChildFail("pipe", nullptr, errno);
  for (int& fd : status_pipe) {  // keep clear of the fixed numbers 0-8
    int moved = fcntl(fd, F_DUPFD_CLOEXEC, 64);
    if (moved < 0) ChildFail("dup", nullptr, errno);
    close(fd);
    fd = moved;
  }
  pid_t init = fork();
  if (init < 0) ChildFail("fork init", nullptr, errno);
  if (init == 0) {
    close(status_pipe[0]);
    RunInit(plan, status_pipe[1]);
  }
  close(status_pipe[1]);
  g_init_pid = init;
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = HelperTermHandler;
  sigaction(SIGTERM, &sa, nullptr);
  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  sigprocmask(SIG_UNBLOCK, &term, nullptr);
  for (int fd = 0; fd < kFirstFreeFd; ++fd) close(fd);
  int init_status = 0;
  while (waitpid(init, &init_status, 0) < 0 && errno == EINTR) {
  }
  int st = 0;
  if (!ReadExact(status_pipe[0], &st, sizeof(st))) st = init_status;
  if (WIFEXITED(st)) _exit(WEXITSTATUS(st));
  if (WIFSIGNALED(st)) {
    int sig = WTERMSIG(st);
    struct rlimit zero = {0, 0};
    setrlimit(RLIMIT_CORE, &zero);
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    signal(sig, SIG_DFL);
    kill(getpid(), sig);
    _exit(128 + sig);
  }
  _exit(kSetupExitCode);
}

}  // namespace crl::runner::sandbox_child
