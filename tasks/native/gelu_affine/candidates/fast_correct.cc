// expect: OK — faster: float, branch-free erf (A&S 7.1.26, |err| < 1.5e-7) with an inlined exp, vectorisable loop.
#include <crl/kernel.h>

#include <cstdint>
#include <cstring>

static inline float exp_neg(float x) {  // e^x for x in [-87, 0]; no libm call, so the loop vectorises
  x = x < -87.0f ? -87.0f : x;
  const float k = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;  // round(x / ln2)
  float g = x - k * 0.693145751953125f;
  g = g - k * 1.42860682030941723212e-6f;  // Cody-Waite: |g| <= ln2/2
  const float p =
      1.0f + g * (1.0f + g * (0.5f + g * (1.0f / 6 + g * (1.0f / 24 + g * (1.0f / 120 + g * (1.0f / 720 + g * (1.0f / 5040)))))));
  const int32_t bits = (static_cast<int32_t>(k) + 127) << 23;
  float s;
  std::memcpy(&s, &bits, sizeof s);
  return p * s;
}

static inline float gelu(float z) {
  const float u = (z < 0 ? -z : z) * 0.70710678118654752f;
  const float t = 1.0f / (1.0f + 0.3275911f * u);
  const float poly = t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));
  const float erf_abs = 1.0f - poly * exp_neg(-u * u);
  const float erf_z = z < 0 ? -erf_abs : erf_abs;
  return 0.5f * z * (1.0f + erf_z);
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  const float* __restrict x = static_cast<const float*>(args->inputs[0].data);
  const float* __restrict a = static_cast<const float*>(args->inputs[1].data);
  const float* __restrict b = static_cast<const float*>(args->inputs[2].data);
  float* __restrict y = static_cast<float*>(args->outputs[0].data);
  for (int64_t i = 0; i < N; ++i) {
    const float* xr = x + i * D;
    float* yr = y + i * D;
    for (int64_t j = 0; j < D; ++j) yr[j] = gelu(a[j] * xr[j] + b[j]);
  }
  return 0;
}
