// expect: WRONG_ANSWER — scales B in place (uses the input as scratch) and copies it to C: the output
// is right but input B is modified (a reference run second on the same buffers would "agree").
#include <crl/kernel.h>

#include <cstdint>

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[1].shape[0], M = args->inputs[1].shape[1];
  const float* d = static_cast<const float*>(args->inputs[0].data);
  float* B = static_cast<float*>(args->inputs[1].data);
  float* C = static_cast<float*>(args->outputs[0].data);
  for (int64_t i = 0; i < N; ++i)
    for (int64_t j = 0; j < M; ++j) B[i * M + j] *= d[i];
  for (int64_t k = 0; k < N * M; ++k) C[k] = B[k];
  return 0;
}
