// Not hostile: uses a std::thread (clone with CLONE_THREAD must stay allowed)
// to compute y = a + b.
#include <thread>

#include "crl/kernel.h"

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const float* a = static_cast<const float*>(args->inputs[0].data);
  const float* b = static_cast<const float*>(args->inputs[1].data);
  float* y = static_cast<float*>(args->outputs[0].data);
  int64_t n = crl_numel(&args->outputs[0]);
  std::thread t([&] {
    for (int64_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
  });
  t.join();
  return 0;
}
