// expect: WRONG_ANSWER — "all-half" sigmoid e^a / (1 + e^a) with e^a rounded to fp16: fine for |a| < 11
// (the uniform trial), but e^a overflows to inf for a > 11.09 and inf/inf = NaN (the normal(0, 4) trial).
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
  const int64_t n = crl_numel(&args->inputs[0]);
  const uint16_t* a = static_cast<const uint16_t*>(args->inputs[0].data);
  const uint16_t* b = static_cast<const uint16_t*>(args->inputs[1].data);
  uint16_t* y = static_cast<uint16_t*>(args->outputs[0].data);
  for (int64_t k = 0; k < n; ++k) {
    const float av = half_to_float(a[k]), bv = half_to_float(b[k]);
    const float e = half_to_float(float_to_half(std::exp(av)));  // fp16 storage of e^a
    y[k] = float_to_half(av * (e / (1.0f + e)) * bv);
  }
  return 0;
}
