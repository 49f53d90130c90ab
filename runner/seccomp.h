// runner/seccomp.h — the seccomp profiles of sandboxed processes.
//
// Built on libseccomp when it was found at configure time; otherwise
// SeccompAvailable() is false and every install/build call fails with
// "seccomp unavailable: built without libseccomp" (callers decide whether to
// refuse to run, which crl-runner does unless CRL_RUNNER_NO_SECCOMP=1).
//
// Both profiles: default ALLOW (CUDA and compilers need a wide, changing set
// of syscalls), x86-64/aarch64 native ABI only (any other ABI, e.g. int 0x80
// or x32, kills the process), no_new_privs set. Listed syscalls either kill
// the whole process (SCMP_ACT_KILL_PROCESS: the parent sees SIGSYS, reported
// as ExitInfo::seccomp_violation) or fail with an errno:
//
//   kill, both profiles:
//     socket(domain != AF_UNIX), ptrace, process_vm_readv/writev,
//     mount, umount2, pivot_root, chroot, unshare, setns, open_tree,
//     move_mount, fsopen, fsconfig, fsmount, fspick, mount_setattr,
//     kexec_load, kexec_file_load, init_module, finit_module, delete_module,
//     bpf, perf_event_open, keyctl, add_key, request_key, reboot, swapon,
//     swapoff, io_uring_setup/enter/register, personality, userfaultfd,
//     name_to_handle_at, open_by_handle_at, acct, quotactl, settimeofday,
//     clock_settime, clock_adjtime, adjtimex, iopl, ioperm, syslog,
//     sethostname, setdomainname, vhangup, pidfd_getfd, lookup_dcookie
//   kill, kRunner only:
//     fork, vfork, execve, execveat, clone without CLONE_THREAD (fork-style
//     clones, e.g. fork(), posix_spawn(), system(); pthread_create is fine)
//   errno, kRunner and kHarness (a side being timed):
//     setsid, setpgid -> EPERM: every process a side starts stays in its
//       process group, which the worker stops while the other side is timed
//       (a child that left it could spin through the other side's timing);
//     sched_setaffinity -> EPERM: a side runs on the CPUs of its lane
//   errno:
//     clone3 -> ENOSYS (glibc then falls back to clone(), whose flags a
//       filter can inspect; clone3 passes flags in memory)
//     connect -> EACCES, and socket(AF_UNIX, SOCK_DGRAM) -> EACCES: a
//       read-only bind of the host still exposes unix sockets (/run/...),
//       and connecting to them needs no write access to the filesystem.
//
// Thread-safety: InstallSeccomp applies to every thread of the process
// (TSYNC), so threads the CUDA driver started during backend initialisation
// are filtered too.
#ifndef CRL_RUNNER_SECCOMP_H_
#define CRL_RUNNER_SECCOMP_H_

#include <cstdint>
#include <string>
#include <vector>

namespace crl::runner {

enum class SeccompProfile {
  kNone,      // no filter
  kCompiler,  // compilers: may fork/exec (cc1plus, as, ld, nvcc's tools)
  kRunner,    // crl-runner after backend init: no new processes, no exec
  kHarness,   // the KernelBench harness serving a side: as kCompiler, but
              // what it starts stays in its process group and on its CPUs
};

// "none", "compiler", "runner", "harness".
const char* SeccompProfileName(SeccompProfile profile);
bool SeccompProfileFromName(const std::string& name, SeccompProfile* profile);

// True if this build has libseccomp.
bool SeccompAvailable();

// One raw classic-BPF instruction (layout of struct sock_filter).
struct SeccompInstruction {
  uint16_t code;
  uint8_t jt;
  uint8_t jf;
  uint32_t k;
};

// Compiles `profile` into a BPF program (kNone: empty program). Allocates:
// call it BEFORE fork() so a forked child only needs InstallSeccompProgram.
bool BuildSeccompProgram(SeccompProfile profile,
                         std::vector<SeccompInstruction>* program,
                         std::string* error);

// Sets no_new_privs and loads `program` (no-op for an empty program) with
// seccomp(2); all_threads adds SECCOMP_FILTER_FLAG_TSYNC (every thread of
// the process gets the filter). Async-signal-safe (two syscalls): usable
// between fork() and execve(). Returns 0 or an errno value.
int InstallSeccompProgram(const SeccompInstruction* program, size_t length,
                          bool all_threads);

// Builds and installs `profile` for the whole process (TSYNC).
bool InstallSeccomp(SeccompProfile profile, std::string* error);

}  // namespace crl::runner

#endif  // CRL_RUNNER_SECCOMP_H_
