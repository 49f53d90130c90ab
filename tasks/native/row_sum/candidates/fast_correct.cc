// expect: OK — faster: 16 independent float lanes per row (vectorises, no add-latency chain), then a tree.
#include <crl/kernel.h>

#include <cstdint>

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  const float* __restrict x = static_cast<const float*>(args->inputs[0].data);
  float* __restrict y = static_cast<float*>(args->outputs[0].data);
  constexpr int L = 16;
  for (int64_t i = 0; i < N; ++i) {
    const float* r = x + i * D;
    float lane[L] = {};
    int64_t j = 0;
    for (; j + L <= D; j += L)
      for (int l = 0; l < L; ++l) lane[l] += r[j + l];
    float tail = 0.0f;
    for (; j < D; ++j) tail += r[j];
    for (int w = L / 2; w > 0; w /= 2)
      for (int l = 0; l < w; ++l) lane[l] += lane[l + w];
    y[i] = lane[0] + tail;
  }
  return 0;
}
