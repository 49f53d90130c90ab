// Timing hack fixture (row_sum): correct for its first 8 calls in a process (enough to
// pass verification), then returns after writing only the first row — fast
// and wrong. Expect the timed-output check to raise FLAG_WRITE_AFTER_RETURN.
#include <crl/kernel.h>

#include <cstdint>

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  static int calls = 0;
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  const int64_t rows = ++calls > 8 ? 1 : N;
  const float* x = static_cast<const float*>(args->inputs[0].data);
  float* y = static_cast<float*>(args->outputs[0].data);
  for (int64_t i = 0; i < N; ++i) y[i] = 0;
  for (int64_t i = 0; i < rows; ++i) {
    double s = 0;
    for (int64_t j = 0; j < D; ++j) s += x[i * D + j];
    y[i] = static_cast<float>(s);
  }
  return 0;
}
