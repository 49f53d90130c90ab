// expect: WRONG_ANSWER — uses the input as scratch: overwrites x with exp(x - max) (output is right,
// but the inputs are no longer bit-identical after the call).
#include <crl/kernel.h>

#include <cmath>
#include <cstdint>

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  float* x = static_cast<float*>(args->inputs[0].data);  // casts away the read-only contract
  float* y = static_cast<float*>(args->outputs[0].data);
  for (int64_t i = 0; i < N; ++i) {
    float* r = x + i * D;
    float m = r[0];
    for (int64_t j = 1; j < D; ++j) m = r[j] > m ? r[j] : m;
    double sum = 0.0;
    for (int64_t j = 0; j < D; ++j) {
      r[j] = std::exp(r[j] - m);
      sum += r[j];
    }
    for (int64_t j = 0; j < D; ++j) y[i * D + j] = static_cast<float>(r[j] / sum);
  }
  return 0;
}
