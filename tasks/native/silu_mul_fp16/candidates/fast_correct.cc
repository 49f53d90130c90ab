// expect: OK — faster: float math, a 65536-entry half->float table built once, branch-free
// float->half rounding and an inlined exp, so the main loop has no libm calls or branches.
#include <crl/kernel.h>

#include <cmath>
#include <cstdint>
#include <cstring>

static inline uint32_t as_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
static inline float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

static const float* half_table() {
  static float table[65536];
  static bool ready = false;
  if (!ready) {
    for (uint32_t h = 0; h < 65536; ++h) {
      const int sign = h >> 15, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
      float v;
      if (exp == 0) v = std::ldexp(static_cast<float>(man), -24);
      else if (exp == 31) v = man ? NAN : INFINITY;
      else v = std::ldexp(static_cast<float>(man | 0x400), exp - 25);
      table[h] = sign ? -v : v;
    }
    ready = true;
  }
  return table;
}

// Round-to-nearest-even float -> half without branches on the value (selects instead).
static inline uint16_t to_half(float f) {
  const uint32_t u = as_bits(f), sign = (u >> 16) & 0x8000u, absu = u & 0x7fffffffu;
  // subnormal results: adding 0.5 (2^-1) aligns the 10 result bits at the bottom of the mantissa,
  // and the FPU's own round-to-nearest-even does the rounding.
  const uint32_t sub = as_bits(from_bits(absu) + 0.5f) - as_bits(0.5f);
  // normal results: rebias the exponent and round on the 13 dropped bits.
  const uint32_t nrm = (absu + 0xc8000fffu + ((absu >> 13) & 1u)) >> 13;  // 0xc8000000 = (15 - 127) << 23
  uint32_t h = absu < 0x38800000u ? sub : nrm;
  h = absu >= 0x477ff000u ? 0x7c00u : h;  // overflow -> inf
  h = absu > 0x7f800000u ? 0x7e00u : h;   // NaN
  return static_cast<uint16_t>(h | sign);
}

static inline float exp_le0(float x) {  // e^x for x <= 0 (clamped at -87): Cody-Waite + degree-7 polynomial
  x = x < -87.0f ? -87.0f : x;
  const float k = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  float g = x - k * 0.693145751953125f;
  g = g - k * 1.42860682030941723212e-6f;
  const float p =
      1.0f + g * (1.0f + g * (0.5f + g * (1.0f / 6 + g * (1.0f / 24 + g * (1.0f / 120 + g * (1.0f / 720 + g * (1.0f / 5040)))))));
  return p * from_bits(static_cast<uint32_t>(static_cast<int32_t>(k) + 127) << 23);
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t n = crl_numel(&args->inputs[0]);
  const uint16_t* __restrict a = static_cast<const uint16_t*>(args->inputs[0].data);
  const uint16_t* __restrict b = static_cast<const uint16_t*>(args->inputs[1].data);
  uint16_t* __restrict y = static_cast<uint16_t*>(args->outputs[0].data);
  const float* __restrict table = half_table();
  for (int64_t k = 0; k < n; ++k) {
    const float av = table[a[k]], bv = table[b[k]];
    const float e = exp_le0(-std::fabs(av));               // e^-|a| in (0, 1]
    const float sig = (av >= 0.0f ? 1.0f : e) / (1.0f + e);  // sigmoid(a), no overflow
    y[k] = to_half(av * sig * bv);
  }
  return 0;
}
