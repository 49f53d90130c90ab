// Timing hack fixture (row_sum): correct, but sleeps a random 0-8 ms per call,
// so its times are all over the place. Expect it re-measured and said (FLAG_NOISY, or a
// pinned-down speedup below 1 with the noise in the evidence), never a fast number.
#include <crl/kernel.h>
#include <time.h>

#include <cstdint>

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  static uint64_t state = 88172645463325252ull;
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  timespec ts{0, static_cast<long>(state % 8000000)};
  nanosleep(&ts, nullptr);
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  const float* x = static_cast<const float*>(args->inputs[0].data);
  float* y = static_cast<float*>(args->outputs[0].data);
  for (int64_t i = 0; i < N; ++i) {
    double s = 0;
    for (int64_t j = 0; j < D; ++j) s += x[i * D + j];
    y[i] = static_cast<float>(s);
  }
  return 0;
}
