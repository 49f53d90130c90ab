// expect: WRONG_ANSWER — "log-domain" product a*x = exp(log a + log x): exact enough when x, a > 0
// (the uniform trial), NaN wherever x or a is negative (the normal trial); NaN must fail fast.
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
      const double ax = std::exp(std::log(static_cast<double>(a[j])) + std::log(static_cast<double>(x[i * D + j])));
      const double z = ax + b[j];
      y[i * D + j] = static_cast<float>(0.5 * z * (1.0 + std::erf(z / std::sqrt(2.0))));
    }
  return 0;
}
