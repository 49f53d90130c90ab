// expect: OK — correct but slow: 8 full passes over x, each counting only the elements that fall in
// one group of 32 bins.
#include <crl/kernel.h>

#include <cstdint>

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0];
  const float* x = static_cast<const float*>(args->inputs[0].data);
  int32_t* counts = static_cast<int32_t*>(args->outputs[0].data);
  for (int b = 0; b < 256; ++b) counts[b] = 0;
  for (int g = 0; g < 8; ++g) {
    const float lo = static_cast<float>(32 * g) / 256.0f, hi = static_cast<float>(32 * g + 32) / 256.0f;  // exact
    for (int64_t k = 0; k < N; ++k) {
      const float v = x[k];
      const bool hit = v >= lo && v < hi;
      counts[hit ? static_cast<int>(v * 256.0f) : 32 * g] += hit ? 1 : 0;
    }
  }
  return 0;
}
