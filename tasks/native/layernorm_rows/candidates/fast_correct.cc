// expect: OK — faster: float, two vectorised passes per row with 16 independent lanes, fused scale/shift.
#include <crl/kernel.h>

#include <cmath>
#include <cstdint>

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  const float* __restrict x = static_cast<const float*>(args->inputs[0].data);
  const float* __restrict gamma = static_cast<const float*>(args->inputs[1].data);
  const float* __restrict beta = static_cast<const float*>(args->inputs[2].data);
  float* __restrict y = static_cast<float*>(args->outputs[0].data);
  const float eps = static_cast<float>(args->scalars[0]);
  constexpr int L = 16;
  for (int64_t i = 0; i < N; ++i) {
    const float* r = x + i * D;
    float* o = y + i * D;
    float acc[L] = {};
    int64_t j = 0;
    for (; j + L <= D; j += L)
      for (int l = 0; l < L; ++l) acc[l] += r[j + l];
    float s = 0.0f;
    for (; j < D; ++j) s += r[j];
    for (int l = 0; l < L; ++l) s += acc[l];
    const float mean = s / static_cast<float>(D);
    float sq[L] = {};
    for (j = 0; j + L <= D; j += L)
      for (int l = 0; l < L; ++l) {
        const float d = r[j + l] - mean;
        sq[l] += d * d;
      }
    float v = 0.0f;
    for (; j < D; ++j) v += (r[j] - mean) * (r[j] - mean);
    for (int l = 0; l < L; ++l) v += sq[l];
    const float inv = 1.0f / std::sqrt(v / static_cast<float>(D) + eps);
    for (j = 0; j < D; ++j) o[j] = (r[j] - mean) * inv * gamma[j] + beta[j];
  }
  return 0;
}
