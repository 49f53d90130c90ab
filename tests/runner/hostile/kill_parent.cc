// Hostile: tries to kill its parent, its process group and everything it can
// signal, then returns normally with y = 7. Expected: nothing outside the
// sandbox is hurt; the call completes (init ignores signals from inside).
#include <signal.h>
#include <unistd.h>

#include "crl/kernel.h"

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  kill(getppid(), SIGKILL);
  kill(1, SIGKILL);
  kill(-1, SIGKILL);
  float* y = static_cast<float*>(args->outputs[0].data);
  int64_t n = crl_numel(&args->outputs[0]);
  for (int64_t i = 0; i < n; ++i) y[i] = 7.0f;
  return 0;
}
