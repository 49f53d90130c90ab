// Reference (host): numerically stable row softmax in double (three passes, exp evaluated twice).
#include <crl/kernel.h>

#include <cmath>
#include <cstdint>

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  if (args->num_inputs != 1 || args->num_outputs != 1) return 1;
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  const float* x = static_cast<const float*>(args->inputs[0].data);
  float* y = static_cast<float*>(args->outputs[0].data);
  for (int64_t i = 0; i < N; ++i) {
    const float* r = x + i * D;
    double m = r[0];
    for (int64_t j = 1; j < D; ++j) m = r[j] > m ? r[j] : m;
    double sum = 0.0;
    for (int64_t j = 0; j < D; ++j) sum += std::exp(r[j] - m);
    for (int64_t j = 0; j < D; ++j) y[i * D + j] = static_cast<float>(std::exp(r[j] - m) / sum);
  }
  return 0;
}
