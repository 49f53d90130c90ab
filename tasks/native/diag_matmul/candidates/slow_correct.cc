// expect: OK — correct but slow: never builds diag(d) but still runs the full k loop for every
// output, C[i,j] = sum_k (k == i ? d[k] : 0) * B[k,j], walking B down its columns.
#include <crl/kernel.h>

#include <cstdint>

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[1].shape[0], M = args->inputs[1].shape[1];
  const float* d = static_cast<const float*>(args->inputs[0].data);
  const float* B = static_cast<const float*>(args->inputs[1].data);
  float* C = static_cast<float*>(args->outputs[0].data);
  for (int64_t i = 0; i < N; ++i)
    for (int64_t j = 0; j < M; ++j) {
      double acc = 0.0;
      for (int64_t k = 0; k < N; ++k) acc += (k == i ? static_cast<double>(d[k]) : 0.0) * B[k * M + j];
      C[i * M + j] = static_cast<float>(acc);
    }
  return 0;
}
