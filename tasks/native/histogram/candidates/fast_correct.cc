// expect: OK — faster: bins are computed branch-free for a chunk of 1024 elements at a time (a
// vectorisable loop; out-of-range values go to a dummy bin 256), then counted into 4 interleaved
// sub-histograms, which breaks the store-to-load chain between consecutive equal bins.
#include <crl/kernel.h>

#include <cstdint>

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0];
  const float* __restrict x = static_cast<const float*>(args->inputs[0].data);
  int32_t* __restrict counts = static_cast<int32_t*>(args->outputs[0].data);
  constexpr int64_t CH = 1024;
  uint32_t sub[4][257] = {};
  uint16_t bins[CH];
  for (int64_t k0 = 0; k0 < N; k0 += CH) {
    const int64_t n = N - k0 < CH ? N - k0 : CH;
    for (int64_t k = 0; k < n; ++k) {
      const float v = x[k0 + k];
      const bool in = v >= 0.0f && v < 1.0f;
      const float safe = in ? v : 0.0f;  // keep the float->int conversion in range
      bins[k] = static_cast<uint16_t>(in ? static_cast<int>(safe * 256.0f) : 256);
    }
    int64_t k = 0;
    for (; k + 4 <= n; k += 4) {
      ++sub[0][bins[k]];
      ++sub[1][bins[k + 1]];
      ++sub[2][bins[k + 2]];
      ++sub[3][bins[k + 3]];
    }
    for (; k < n; ++k) ++sub[0][bins[k]];
  }
  for (int b = 0; b < 256; ++b) counts[b] = static_cast<int32_t>(sub[0][b] + sub[1][b] + sub[2][b] + sub[3][b]);
  return 0;
}
