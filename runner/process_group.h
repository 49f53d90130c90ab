// runner/process_group.h — what the worker does to a sandbox's processes from
// outside: find them (every process of its process group, which nothing in
// it can leave: seccomp.h), and read or write the payload's memory while it
// is stopped. Reading a stopped side's outputs this way runs none of its
// code: a side cannot compute an output when it is read (a lazy tensor, a
// page-fault handler over protected pages), and what a side patched in its
// own process (torch methods, the harness's functions) is never called.
//
// Memory access is process_vm_readv/writev: allowed to the sandbox's parent
// (the payload's uid is the caller's, mapped; or the caller has
// CAP_SYS_PTRACE), never to anything inside the sandbox (seccomp kills it).
#ifndef CRL_RUNNER_PROCESS_GROUP_H_
#define CRL_RUNNER_PROCESS_GROUP_H_

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace crl::runner {

// The processes whose process group is `pgrp` (from /proc; empty when none).
std::vector<pid_t> GroupProcesses(pid_t pgrp);

// The payload of the sandbox whose helper (group leader) is `pgrp`: the
// process that is PID 2 of its PID namespace (isolated), or the helper
// itself (not isolated). -1 when it cannot be found.
pid_t PayloadPid(pid_t pgrp, bool isolated);

// Waits up to `timeout_seconds` until every thread of `pid` is stopped
// (state T in /proc/PID/task/TID/stat: a SIGSTOP was delivered). False when
// one still runs then, or the process is gone.
bool WaitStopped(pid_t pid, double timeout_seconds);

struct MemoryRange {
  uint64_t address = 0;
  uint64_t length = 0;
};

// Reads `ranges` of `pid`'s memory, one after the other, into *out. False
// with *error ("0x7f...+4096: Bad address") when any byte cannot be read:
// unmapped, or protected (PROT_NONE), or the process is gone.
bool ReadProcessMemory(pid_t pid, const std::vector<MemoryRange>& ranges, std::string* out, std::string* error);

// Writes `bytes` at `address` of `pid`'s memory. False with *error when any
// byte cannot be written (unmapped, read-only).
bool WriteProcessMemory(pid_t pid, uint64_t address, const std::string& bytes, std::string* error);

}  // namespace crl::runner

#endif  // CRL_RUNNER_PROCESS_GROUP_H_
