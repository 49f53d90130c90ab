// expect: OK — correct but slow: walks the matrix column by column, double exp per element.
#include <crl/kernel.h>

#include <cmath>
#include <cstdint>
#include <cstring>

static float half_to_float(uint16_t h) {  // exact decode by assembling the float's bits
  const uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  uint32_t u;
  if (exp == 0) {  // zero / subnormal: man * 2^-24 is exact in float
    const float v = static_cast<float>(man) * (1.0f / 16777216.0f);
    std::memcpy(&u, &v, sizeof u);
    u |= sign;
  } else if (exp == 31) {
    u = sign | 0x7f800000u | (man << 13);
  } else {
    u = sign | ((exp + 112) << 23) | (man << 13);
  }
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

static uint16_t float_to_half(float f) {  // round-to-nearest-even
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000);
  const uint32_t absu = u & 0x7fffffffu;
  if (absu > 0x7f800000u) return sign | 0x7e00;
  if (absu >= 0x477ff000u) return sign | 0x7c00;
  if (absu < 0x38800000u) return sign | static_cast<uint16_t>(std::nearbyint(std::fabs(f) * 16777216.0f));
  uint32_t h = (((absu >> 23) - 112) << 10) | ((absu >> 13) & 0x3ff);
  const uint32_t rest = absu & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;
  return sign | static_cast<uint16_t>(h);
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  const uint16_t* a = static_cast<const uint16_t*>(args->inputs[0].data);
  const uint16_t* b = static_cast<const uint16_t*>(args->inputs[1].data);
  uint16_t* y = static_cast<uint16_t*>(args->outputs[0].data);
  for (int64_t j = 0; j < D; ++j)
    for (int64_t i = 0; i < N; ++i) {
      const double av = half_to_float(a[i * D + j]), bv = half_to_float(b[i * D + j]);
      y[i * D + j] = float_to_half(static_cast<float>(av / (1.0 + std::exp(-av)) * bv));
    }
  return 0;
}
