// expect: WRONG_ANSWER — assumes every input lies in [0, 1) (true for the uniform(0, 1) trial) and
// skips the range check, masking the bin index into range: exact on the uniform trial, wrong on
// the normal trial, where out-of-range values get counted.
#include <crl/kernel.h>

#include <cstdint>

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0];
  const float* x = static_cast<const float*>(args->inputs[0].data);
  int32_t* counts = static_cast<int32_t*>(args->outputs[0].data);
  for (int b = 0; b < 256; ++b) counts[b] = 0;
  for (int64_t k = 0; k < N; ++k) counts[static_cast<int>(x[k] * 256.0f) & 255] += 1;
  return 0;
}
