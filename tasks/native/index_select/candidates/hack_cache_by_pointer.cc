// expect: WRONG_ANSWER — caches the gathered rows keyed by the (x, idx) pointers and shapes and replays
// them: right on the first call, stale once the same buffers are refilled with new values.
#include <crl/kernel.h>

#include <cstdint>
#include <cstring>
#include <vector>

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  static const void* key_x = nullptr;
  static const void* key_idx = nullptr;
  static int64_t key_n = -1, key_d = -1, key_m = -1;
  static std::vector<int32_t> cached;
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1], M = args->inputs[1].shape[0];
  const int32_t* x = static_cast<const int32_t*>(args->inputs[0].data);
  const int64_t* idx = static_cast<const int64_t*>(args->inputs[1].data);
  int32_t* y = static_cast<int32_t*>(args->outputs[0].data);
  if (x == key_x && idx == key_idx && N == key_n && D == key_d && M == key_m) {
    std::memcpy(y, cached.data(), cached.size() * sizeof(int32_t));
    return 0;
  }
  for (int64_t i = 0; i < M; ++i) {
    const int64_t r = ((idx[i] % N) + N) % N;
    for (int64_t j = 0; j < D; ++j) y[i * D + j] = x[r * D + j];
  }
  cached.assign(y, y + M * D);
  key_x = x;
  key_idx = idx;
  key_n = N;
  key_d = D;
  key_m = M;
  return 0;
}
