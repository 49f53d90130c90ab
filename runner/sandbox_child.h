// The child's side of runner/sandbox.cc: everything that runs between
// fork() and execve() (the helper, the namespaces' init, the filesystem
// view, limits, seccomp, exec). The caller may be multi-threaded, so this
// code only makes system calls and touches memory the parent prepared
// before fork() (no malloc, no stdio, no locks). Internal to crl_runner.
#ifndef CRL_RUNNER_SANDBOX_CHILD_H_
#define CRL_RUNNER_SANDBOX_CHILD_H_

#include <sys/resource.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstddef>

#include "runner/seccomp.h"

namespace crl::runner::sandbox_child {

// Exit code of a child process whose setup failed (after writing the reason
// to the error pipe).
constexpr int kSetupExitCode = 125;

// Fixed descriptor numbers in the child after the shuffle.
constexpr int kErrFd = 5;        // error pipe (write end), CLOEXEC
constexpr int kSyncReadFd = 6;   // parent -> helper handshake
constexpr int kSyncWriteFd = 7;  // helper -> parent handshake
constexpr int kExeFd = 8;        // O_PATH of argv[0]
constexpr int kFirstFreeFd = 9;

inline void CloseFd(int* fd) {
  if (*fd >= 0) {
    close(*fd);
    *fd = -1;
  }
}

// ---------------------------------------------------------------------------
// The plan: everything the child needs, prepared before fork().

struct BindPlan {
  const char* path;
  enum Kind { kReadOnly, kReadWrite, kDevice } kind;
  int fd;  // O_PATH fd, opened by init
};

struct ChildPlan {
  const char* const* argv = nullptr;
  const char* const* envp = nullptr;
  bool isolate = true;
  bool change_ids = false;
  uid_t uid = 0;
  gid_t gid = 0;
  pid_t parent_pid = 0;
  const char* cwd = "/tmp";
  rlim_t cpu = 0, as = 0, fsize = 0, nofile = 0, nproc = 0;
  const SeccompInstruction* seccomp = nullptr;
  size_t seccomp_len = 0;
  // Filesystem view.
  BindPlan* binds = nullptr;  // devices first, then ro/rw paths
  size_t num_binds = 0;
  const char* const* masks = nullptr;
  size_t num_masks = 0;
  const char* tmp_options = nullptr;  // "size=...,mode=1777"
  const char* shm_options = nullptr;
  char* mountinfo = nullptr;  // scratch buffer
  size_t mountinfo_size = 0;
};

// Closes every descriptor from `first` up.
void CloseFrom(int first);

// The forked child's whole life: the helper that sets up the namespaces,
// starts their init and reports the payload's exit. Never returns.
[[noreturn]] void RunHelper(const ChildPlan& plan);

}  // namespace crl::runner::sandbox_child

#endif  // CRL_RUNNER_SANDBOX_CHILD_H_
