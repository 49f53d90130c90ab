// expect: WRONG_ANSWER — vectorised loop drops the last partial group of 16 columns (fine only when D % 16 == 0).
#include <crl/kernel.h>

#include <cstdint>

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  const float* x = static_cast<const float*>(args->inputs[0].data);
  float* y = static_cast<float*>(args->outputs[0].data);
  for (int64_t i = 0; i < N; ++i) {
    float lane[16] = {};
    for (int64_t j = 0; j + 16 <= D; j += 16)
      for (int l = 0; l < 16; ++l) lane[l] += x[i * D + j + l];
    float s = 0.0f;
    for (int l = 0; l < 16; ++l) s += lane[l];
    y[i] = s;
  }
  return 0;
}
