// Timing hack fixture (row_sum): the first call is as fast as the reference;
// every later call repeats the work 8 times. A harness that times one call
// would be fooled; the oracle must report the steady state (a slowdown).
#include <crl/kernel.h>

#include <cstdint>

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  static int calls = 0;
  const int repeats = calls++ == 0 ? 1 : 8;
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  const float* x = static_cast<const float*>(args->inputs[0].data);
  volatile float* y = static_cast<float*>(args->outputs[0].data);
  for (int r = 0; r < repeats; ++r) {
    for (int64_t i = 0; i < N; ++i) {
      double s = 0;
      for (int64_t j = 0; j < D; ++j) s += x[i * D + j];
      y[i] = static_cast<float>(s);
    }
  }
  return 0;
}
