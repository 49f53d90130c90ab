// expect: OK — correct but slow: fills y column by column (strided writes), re-wrapping the index each time.
#include <crl/kernel.h>

#include <cstdint>

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1], M = args->inputs[1].shape[0];
  const int32_t* x = static_cast<const int32_t*>(args->inputs[0].data);
  const int64_t* idx = static_cast<const int64_t*>(args->inputs[1].data);
  int32_t* y = static_cast<int32_t*>(args->outputs[0].data);
  for (int64_t j = 0; j < D; ++j)
    for (int64_t i = 0; i < M; ++i) {
      int64_t r = idx[i] % N;
      if (r < 0) r += N;
      y[i * D + j] = x[r * D + j];
    }
  return 0;
}
