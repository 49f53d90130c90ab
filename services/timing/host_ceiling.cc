#include "services/timing/host_ceiling.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <system_error>
#include <thread>
#include <vector>

namespace crl::timing {
namespace {

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// Bytes per second of `threads` threads each summing its own slice of
// `slice_bytes`, each timing its own passes (the first, untimed, writes and
// warms the slice, so no page fault is timed and a slice that fits in the
// caches is read from them): the sum of each thread's best pass. The passes
// need not overlap, so this errs high, the safe side for a ceiling.
double ParallelReadBandwidth(int threads, size_t slice_bytes) {
  const size_t words = slice_bytes / sizeof(uint64_t);
  std::vector<double> best(threads, 0);
  std::vector<uint64_t> sums(threads, 0);
  auto run = [&](int t) {
    std::vector<uint64_t> slice(words);
    for (size_t i = 0; i < words; ++i) slice[i] = i;
    for (int pass = 0; pass < 6; ++pass) {
      const auto t0 = std::chrono::steady_clock::now();
      const uint64_t* p = slice.data();
      uint64_t a = 0, b = 0, c = 0, d = 0;  // independent chains: bandwidth, not add latency
      for (size_t i = 0; i + 4 <= words; i += 4) {
        a += p[i];
        b += p[i + 1];
        c += p[i + 2];
        d += p[i + 3];
      }
      const double s = Seconds(t0);
      sums[t] += a + b + c + d;
      if (pass > 0 && s > 0) best[t] = std::max(best[t], static_cast<double>(words * sizeof(uint64_t)) / s);
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) {
    try {
      pool.emplace_back(run, t);
    } catch (const std::system_error&) {
      break;  // no thread to be had: the cores that ran count
    }
  }
  run(0);
  for (auto& th : pool) th.join();
  uint64_t all = 0;
  for (uint64_t v : sums) all += v;
  if (all == 0) return 0;  // never: keeps the sums observable
  double total = 0;
  for (double b : best) total += b;
  return total;
}

// Bytes per second a large memcpy moves, counting what the memory system
// carries: the source read, the destination read for ownership and written
// back (three bytes of traffic per byte copied). Best of three.
double CopyTraffic(size_t bytes) {
  std::vector<char> a(bytes, 1), b(bytes, 0);
  double best = 0;
  for (int i = 0; i < 3; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    std::memcpy(b.data(), a.data(), bytes);
    const double s = Seconds(t0);
    if (s > 0) best = std::max(best, 3.0 * static_cast<double>(bytes) / s);
    a[i] = b[bytes - 1 - i];  // keep the copies observable
  }
  return best;
}

}  // namespace

double MeasureHostBandwidthCeiling() {
  const int cores = std::max(1u, std::thread::hardware_concurrency());
  // A staged call's inputs are written just before it runs, so a task that
  // fits in the caches is read from them: slices from cache-sized to
  // memory-sized, each read hot (the first of its passes warms it).
  double best = CopyTraffic(size_t{128} << 20);
  const size_t total = size_t{256} << 20;  // all threads' slices together, at most
  for (size_t slice : {size_t{2} << 20, size_t{16} << 20, size_t{64} << 20}) {
    slice = std::max(std::min(slice, total / cores), size_t{256} << 10);
    best = std::max(best, ParallelReadBandwidth(cores, slice));
  }
  return kHostCeilingMargin * best;
}

}  // namespace crl::timing
