// expect: OK — faster: 16 independent min lanes per row (vectorises), then ReLU. Still reads every
// element: it computes the function, it does not exploit the degeneracy.
#include <crl/kernel.h>

#include <cstdint>

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  const float* __restrict x = static_cast<const float*>(args->inputs[0].data);
  float* __restrict y = static_cast<float*>(args->outputs[0].data);
  constexpr int L = 16;
  for (int64_t i = 0; i < N; ++i) {
    const float* r = x + i * D;
    float lane[L];
    for (int l = 0; l < L; ++l) lane[l] = r[0];
    int64_t j = 0;
    for (; j + L <= D; j += L)
      for (int l = 0; l < L; ++l) lane[l] = r[j + l] < lane[l] ? r[j + l] : lane[l];
    float m = r[0];
    for (; j < D; ++j) m = r[j] < m ? r[j] : m;
    for (int l = 0; l < L; ++l) m = lane[l] < m ? lane[l] : m;
    y[i] = m > 0.0f ? m : 0.0f;
  }
  return 0;
}
