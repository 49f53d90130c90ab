// Reference (host): one pass, range check, increment.
#include <crl/kernel.h>

#include <cstdint>

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  if (args->num_inputs != 1 || args->num_outputs != 1 || args->outputs[0].shape[0] != 256) return 1;
  const int64_t N = args->inputs[0].shape[0];
  const float* x = static_cast<const float*>(args->inputs[0].data);
  int32_t* counts = static_cast<int32_t*>(args->outputs[0].data);
  for (int b = 0; b < 256; ++b) counts[b] = 0;
  for (int64_t k = 0; k < N; ++k)
    if (x[k] >= 0.0f && x[k] < 1.0f) counts[static_cast<int>(x[k] * 256.0f)] += 1;
  return 0;
}
