// expect: WRONG_ANSWER — emulates fp16 compute (inputs, z and y rounded to 11 significant bits):
// ~5e-4 relative error, which fp32's 1e-4 tolerance must reject.
#include <crl/kernel.h>

#include <cmath>
#include <cstdint>
#include <cstring>

static inline float to_half_precision(float f) {  // round-to-nearest-even to a 10-bit mantissa
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  u = (u + 0x0FFFu + ((u >> 13) & 1u)) & ~0x1FFFu;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  const float* x = static_cast<const float*>(args->inputs[0].data);
  const float* a = static_cast<const float*>(args->inputs[1].data);
  const float* b = static_cast<const float*>(args->inputs[2].data);
  float* y = static_cast<float*>(args->outputs[0].data);
  for (int64_t i = 0; i < N; ++i)
    for (int64_t j = 0; j < D; ++j) {
      const float z = to_half_precision(to_half_precision(a[j]) * to_half_precision(x[i * D + j]) + to_half_precision(b[j]));
      y[i * D + j] = to_half_precision(0.5f * z * (1.0f + std::erf(z * 0.70710678f)));
    }
  return 0;
}
