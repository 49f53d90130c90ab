// Timing hack fixture (row_sum): the reference's own code, plus a thread
// started when the library loads that spins whenever crl_run is not running
// (present before and after every call, so a thread count around a call
// sees nothing new). Both sides of a host measurement share one CPU: the
// spinner takes it from the reference while the reference is timed, and the
// copy looks faster. The worker stops the side that is not being timed, so
// the expected speedup is about 1.
#include <crl/kernel.h>

#include <atomic>
#include <cstdint>
#include <thread>

namespace {

std::atomic<bool> in_call{false};
volatile uint64_t sink = 0;

struct Spinner {
  Spinner() {
    std::thread([] {
      for (uint64_t i = 0;; ++i) {
        if (!in_call.load(std::memory_order_relaxed)) sink = sink + i;
        else std::this_thread::yield();
      }
    }).detach();
  }
} spinner;

}  // namespace

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  in_call.store(true);
  if (args->num_inputs != 1 || args->num_outputs != 1) return 1;
  const int64_t N = args->inputs[0].shape[0], D = args->inputs[0].shape[1];
  const float* x = static_cast<const float*>(args->inputs[0].data);
  float* y = static_cast<float*>(args->outputs[0].data);
  for (int64_t i = 0; i < N; ++i) {
    double acc = 0.0;
    for (int64_t j = 0; j < D; ++j) acc += x[i * D + j];
    y[i] = static_cast<float>(acc);
  }
  in_call.store(false);
  return 0;
}
