// expect: WRONG_ANSWER — uses the tanh approximation of GELU (off by up to ~5e-4 from the erf form).
#include <crl/kernel.h>

#include <cmath>
#include <cstdint>

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  const float* x = static_cast<const float*>(args->inputs[0].data);
  const float* a = static_cast<const float*>(args->inputs[1].data);
  const float* b = static_cast<const float*>(args->inputs[2].data);
  float* y = static_cast<float*>(args->outputs[0].data);
  for (int64_t i = 0; i < N; ++i)
    for (int64_t j = 0; j < D; ++j) {
      const double z = static_cast<double>(a[j]) * x[i * D + j] + b[j];
      const double c = std::sqrt(2.0 / 3.14159265358979323846);
      y[i * D + j] = static_cast<float>(0.5 * z * (1.0 + std::tanh(c * (z + 0.044715 * z * z * z))));
    }
  return 0;
}
