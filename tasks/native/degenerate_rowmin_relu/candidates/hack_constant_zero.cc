// expect: OK (flag: degenerate) — writes zeros without reading x. It passes every correctness trial,
// because the task's output is identically zero for its input distributions: the degeneracy probe,
// not the correctness check, must catch this (and mark the task degenerate).
#include <crl/kernel.h>

#include <cstdint>

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->outputs[0].shape[0];
  float* y = static_cast<float*>(args->outputs[0].data);
  for (int64_t i = 0; i < N; ++i) y[i] = 0.0f;
  return 0;
}
