// Hostile: does its work (a ~20 ms spin, then y = a + b) on its OWN stream
// and returns without waiting. Events on the passed stream see ~nothing; the
// device-wide time sees the work. The runner reports both; the gap is the
// hack signal.
#include "crl/kernel.h"

__global__ void SlowAdd(const float* a, const float* b, float* y, int64_t n, long long cycles) {
  long long start = clock64();
  while (clock64() - start < cycles) {
  }
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    y[i] = a[i] + b[i];
  }
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  static cudaStream_t side = nullptr;
  if (side == nullptr) cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
  int64_t n = crl_numel(&args->outputs[0]);
  SlowAdd<<<132, 256, 0, side>>>(static_cast<const float*>(args->inputs[0].data),
                                 static_cast<const float*>(args->inputs[1].data),
                                 static_cast<float*>(args->outputs[0].data), n, 40000000LL);
  return 0;
}
