// runner/seccomp_build.cc — builds the profiles of seccomp.h with libseccomp.
#include <errno.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <memory>

#include "runner/seccomp.h"

namespace crl::runner {
namespace {

// Killed in every profile.
constexpr const char* kAlwaysKill[] = {
    "ptrace", "process_vm_readv", "process_vm_writev", "mount", "umount2", "umount",
    "pivot_root", "chroot", "unshare", "setns", "open_tree", "move_mount", "fsopen",
    "fsconfig", "fsmount", "fspick", "mount_setattr", "kexec_load", "kexec_file_load",
    "init_module", "finit_module", "delete_module", "bpf", "perf_event_open", "keyctl",
    "add_key", "request_key", "reboot", "swapon", "swapoff", "io_uring_setup",
    "io_uring_enter", "io_uring_register", "personality", "userfaultfd",
    "name_to_handle_at", "open_by_handle_at", "acct", "quotactl", "quotactl_fd",
    "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "iopl", "ioperm",
    "syslog", "sethostname", "setdomainname", "vhangup", "pidfd_getfd", "lookup_dcookie",
};

// Killed in the runner profile only (no new processes, no exec).
constexpr const char* kRunnerKill[] = {"fork", "vfork", "execve", "execveat"};

struct CtxDeleter {
  void operator()(void* ctx) const { seccomp_release(static_cast<scmp_filter_ctx>(ctx)); }
};

bool Check(int rc, const char* what, std::string* error) {
  if (rc == 0) return true;
  if (error) *error = std::string("seccomp ") + what + ": " + strerror(-rc);
  return false;
}

bool KillSyscall(scmp_filter_ctx ctx, const char* name, std::string* error) {
  int nr = seccomp_syscall_resolve_name(name);
  if (nr == __NR_SCMP_ERROR) return true;  // unknown to this libseccomp: skip
  return Check(seccomp_rule_add(ctx, SCMP_ACT_KILL_PROCESS, nr, 0), name, error);
}

}  // namespace

bool SeccompAvailable() { return true; }

bool BuildSeccompProgram(SeccompProfile profile, std::vector<SeccompInstruction>* program,
                         std::string* error) {
  program->clear();
  if (profile == SeccompProfile::kNone) return true;
  std::unique_ptr<void, CtxDeleter> holder(seccomp_init(SCMP_ACT_ALLOW));
  scmp_filter_ctx ctx = holder.get();
  if (ctx == nullptr) {
    if (error) *error = "seccomp_init failed";
    return false;
  }
  // Any foreign ABI (int 0x80, x32) kills the process; no_new_privs is set
  // by InstallSeccompProgram itself.
  if (!Check(seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS),
             "badarch", error) ||
      !Check(seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0), "nnp", error)) {
    return false;
  }
  for (const char* name : kAlwaysKill) {
    if (!KillSyscall(ctx, name, error)) return false;
  }
  // Sockets: only AF_UNIX may be created, and not datagram ones (they could
  // sendto() a host socket path without connect()). connect() fails.
  if (!Check(seccomp_rule_add(ctx, SCMP_ACT_KILL_PROCESS, SCMP_SYS(socket), 1,
                              SCMP_A0(SCMP_CMP_NE, AF_UNIX)),
             "socket", error) ||
      !Check(seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(socket), 2,
                              SCMP_A0(SCMP_CMP_EQ, AF_UNIX),
                              SCMP_A1(SCMP_CMP_MASKED_EQ, 0xF, SOCK_DGRAM)),
             "socket dgram", error) ||
      !Check(seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(connect), 0), "connect",
             error)) {
    return false;
  }
  // clone3 keeps its flags in memory, out of a filter's reach: make glibc
  // fall back to clone().
  if (!Check(seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0), "clone3",
             error)) {
    return false;
  }
  if (profile == SeccompProfile::kRunner || profile == SeccompProfile::kHarness) {
    for (const char* name : {"setsid", "setpgid", "sched_setaffinity"}) {
      const int nr = seccomp_syscall_resolve_name(name);
      if (!Check(seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0), name, error)) return false;
    }
  }
  if (profile == SeccompProfile::kRunner) {
    for (const char* name : kRunnerKill) {
      if (!KillSyscall(ctx, name, error)) return false;
    }
    // Threads (CLONE_THREAD) are fine; anything fork-like is not.
    if (!Check(seccomp_rule_add(ctx, SCMP_ACT_KILL_PROCESS, SCMP_SYS(clone), 1,
                                SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0)),
               "clone", error)) {
      return false;
    }
  }

  int fd = memfd_create("crl-seccomp", MFD_CLOEXEC);
  if (fd < 0) {
    if (error) *error = std::string("memfd_create: ") + strerror(errno);
    return false;
  }
  bool ok = Check(seccomp_export_bpf(ctx, fd), "export", error);
  off_t size = ok ? lseek(fd, 0, SEEK_END) : -1;
  if (ok && (size <= 0 || size % sizeof(SeccompInstruction) != 0)) {
    if (error) *error = "seccomp export produced a bad program";
    ok = false;
  }
  if (ok) {
    program->resize(static_cast<size_t>(size) / sizeof(SeccompInstruction));
    ssize_t n = pread(fd, program->data(), static_cast<size_t>(size), 0);
    if (n != size) {
      if (error) *error = "reading exported seccomp program failed";
      ok = false;
    }
  }
  close(fd);
  if (!ok) program->clear();
  return ok;
}

}  // namespace crl::runner
