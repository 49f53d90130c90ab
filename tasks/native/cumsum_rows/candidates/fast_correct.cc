// expect: OK — faster: scans 8-element blocks in registers (independent of the running total, so the
// add-latency chain is one add per 8 elements instead of one per element), then adds the carry.
#include <crl/kernel.h>

#include <cstdint>

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  const float* __restrict x = static_cast<const float*>(args->inputs[0].data);
  float* __restrict y = static_cast<float*>(args->outputs[0].data);
  for (int64_t i = 0; i < N; ++i) {
    const float* __restrict r = x + i * D;
    float* __restrict o = y + i * D;
    float carry = 0.0f;
    int64_t j = 0;
    for (; j + 8 <= D; j += 8) {
      float v[8];
      for (int q = 0; q < 8; ++q) v[q] = r[j + q];
      v[1] += v[0];  // in-register prefix of the block: 3 dependent steps
      v[3] += v[2];
      v[5] += v[4];
      v[7] += v[6];
      v[2] += v[1];
      v[3] += v[1];
      v[6] += v[5];
      v[7] += v[5];
      v[4] += v[3];
      v[5] += v[3];
      v[6] += v[3];
      v[7] += v[3];
      for (int q = 0; q < 8; ++q) o[j + q] = v[q] + carry;
      carry += v[7];
    }
    for (; j < D; ++j) {
      carry += r[j];
      o[j] = carry;
    }
  }
  return 0;
}
