// Timing hack fixture (transpose): writes the first quarter of the output at
// once, protects the pages of the rest (mprotect PROT_NONE) and returns; a
// SIGSEGV handler fills a page when something reads it, and unprotects it.
// A runner that copies its outputs out in its own process after the clock
// stopped would run the handler off the clock: every read sees the right
// values, and the call looks four times faster than it is. The worker reads
// a stopped runner's memory from outside instead: the protected pages
// cannot be read, and the timing is flagged.
#include <crl/kernel.h>

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

namespace {

const float* g_x = nullptr;
float* g_y = nullptr;
int64_t g_n = 0, g_d = 0;
uintptr_t g_lazy_begin = 0, g_lazy_end = 0;

void FillPage(uintptr_t page, size_t size) {
  mprotect(reinterpret_cast<void*>(page), size, PROT_READ | PROT_WRITE);
  const int64_t first = static_cast<int64_t>((page - reinterpret_cast<uintptr_t>(g_y)) / sizeof(float));
  const int64_t last = first + static_cast<int64_t>(size / sizeof(float));
  for (int64_t k = first; k < last && k < g_n * g_d; ++k) {
    const int64_t j = k / g_n, i = k % g_n;  // y[j, i] = x[i, j]
    g_y[k] = g_x[i * g_d + j];
  }
}

void OnFault(int, siginfo_t* info, void*) {
  const uintptr_t at = reinterpret_cast<uintptr_t>(info->si_addr);
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  if (at < g_lazy_begin || at >= g_lazy_end) _exit(99);
  FillPage(at & ~(page - 1), page);
}

}  // namespace

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  // The previous call's pages are given back first: the runner frees its
  // buffers and may hand the memory out again (a careful cheat keeps its
  // host process healthy).
  if (g_lazy_end > g_lazy_begin) {
    mprotect(reinterpret_cast<void*>(g_lazy_begin), g_lazy_end - g_lazy_begin, PROT_READ | PROT_WRITE);
  }
  g_n = args->inputs[0].shape[0];
  g_d = args->inputs[0].shape[1];
  g_x = static_cast<const float*>(args->inputs[0].data);
  g_y = static_cast<float*>(args->outputs[0].data);
  static bool installed = false;
  if (!installed) {
    struct sigaction sa;
    std::memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = OnFault;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, nullptr);
    installed = true;
  }
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = reinterpret_cast<uintptr_t>(g_y);
  const uintptr_t end = begin + static_cast<uintptr_t>(g_n * g_d) * sizeof(float);
  // Whole pages after the first quarter; what lies outside them is written now.
  g_lazy_begin = (begin + (end - begin) / 4 + page - 1) & ~(page - 1);
  g_lazy_end = end & ~(page - 1);
  if (g_lazy_end <= g_lazy_begin) g_lazy_begin = g_lazy_end = end;  // too small to play: all at once
  for (int64_t k = 0; k < g_n * g_d; ++k) {
    const uintptr_t at = begin + static_cast<uintptr_t>(k) * sizeof(float);
    if (at >= g_lazy_begin && at < g_lazy_end) continue;
    const int64_t j = k / g_n, i = k % g_n;
    g_y[k] = g_x[i * g_d + j];
  }
  if (g_lazy_end > g_lazy_begin) mprotect(reinterpret_cast<void*>(g_lazy_begin), g_lazy_end - g_lazy_begin, PROT_NONE);
  return 0;
}
