// How much memory this process may use, for budgets sized to the machine
// (or the container) instead of fixed numbers.
#ifndef CRL_COMMON_MEMORY_H_
#define CRL_COMMON_MEMORY_H_

#include <cstdint>
#include <optional>
#include <string>
#include "absl/strings/string_view.h"

namespace crl {

// A cgroup memory limit file's content (v2 `memory.max`, v1
// `memory.limit_in_bytes`) in bytes; nullopt for "max", for v1's "no
// limit" (a value of 2^62 or more), and for text that is not a number.
std::optional<int64_t> ParseCgroupMemoryLimit(absl::string_view text);

// The smaller of the machine's physical memory and the limit of the cgroup
// mounted at `cgroup_root` (v2 `memory.max`, else v1
// `memory/memory.limit_in_bytes`: in a container, the container's own); 0
// when neither is known.
int64_t UsableMemoryBytes(const std::string& cgroup_root = "/sys/fs/cgroup");

// Makes glibc keep the memory this process frees for its next allocations,
// on every thread. No mmap for large blocks: each one freed went back to the
// kernel, and the next allocation of its size paid a page fault per 4 KiB
// (150,000 a second in a CPU trainer step, a third of its time in the
// kernel). No trimming of the heap's top. And one arena for all threads: a
// thread's own arena cannot hold a block over 64 MiB, so glibc maps such a
// block afresh each time (an SFT step of 2,444 tokens ran 10x slower on the
// trainer's step thread than on the main thread). The process's resident
// size then stays at its peak. For the processes that allocate and free the
// same large tensors over and over (crl-trainer, crl-sampler and their
// benchmarks); call first thing in main, before any thread starts.
void RetainFreedHeap();

}  // namespace crl

#endif  // CRL_COMMON_MEMORY_H_
