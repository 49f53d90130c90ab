// expect: SANDBOX_VIOLATION — computes the right answer, then fork()s a child process that outlives the
// call (standing in for "finish the work in another process"); process creation must be refused.
// (Includes <unistd.h>, outside the allowed headers, on purpose.)
#include <crl/kernel.h>
#include <unistd.h>

#include <cstdint>

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t B = args->inputs[0].shape[0], Cin = args->inputs[0].shape[1], L = args->inputs[0].shape[2];
  const int64_t Cout = args->inputs[1].shape[0], K = args->inputs[1].shape[2];
  const int64_t Lout = L - K + 1;
  const float* x = static_cast<const float*>(args->inputs[0].data);
  const float* w = static_cast<const float*>(args->inputs[1].data);
  const float* bias = static_cast<const float*>(args->inputs[2].data);
  float* y = static_cast<float*>(args->outputs[0].data);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t o = 0; o < Cout; ++o)
      for (int64_t t = 0; t < Lout; ++t) {
        double acc = bias[o];
        for (int64_t c = 0; c < Cin; ++c)
          for (int64_t k = 0; k < K; ++k)
            acc += static_cast<double>(w[(o * Cin + c) * K + k]) * x[(b * Cin + c) * L + t + k];
        y[(b * Cout + o) * Lout + t] = static_cast<float>(acc);
      }
  const pid_t pid = fork();
  if (pid == 0) {  // child: linger, then leave without running the parent's atexit handlers
    sleep(2);
    _exit(0);
  }
  return 0;
}
