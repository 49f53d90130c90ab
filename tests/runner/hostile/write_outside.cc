// Hostile: tries to write outside its private /tmp. Flags in y:
//   y[0] = 1 if creating CRL_PROBE_PATH (a host path, given as scalar-less
//          fixed path /work/crl_hostile_probe) succeeded
//   y[1] = 1 if appending to /etc/hostname succeeded
//   y[2] = 1 if writing /tmp/private_probe succeeded (expected: yes)
//   y[3] = 1 if writing /proc/sys/kernel/core_pattern succeeded
//   y[4] = 1 if creating a file in /dev succeeded
#include <fcntl.h>
#include <unistd.h>

#include "crl/kernel.h"

static float TryWrite(const char* path, int flags) {
  int fd = open(path, flags, 0644);
  if (fd < 0) return 0.0f;
  bool ok = write(fd, "x\n", 2) == 2;
  close(fd);
  return ok ? 1.0f : 0.0f;
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  float* y = static_cast<float*>(args->outputs[0].data);
  y[0] = TryWrite("/work/crl_hostile_probe", O_WRONLY | O_CREAT | O_TRUNC);
  y[1] = TryWrite("/etc/hostname", O_WRONLY | O_APPEND);
  y[2] = TryWrite("/tmp/private_probe", O_WRONLY | O_CREAT | O_TRUNC);
  y[3] = TryWrite("/proc/sys/kernel/core_pattern", O_WRONLY);
  y[4] = TryWrite("/dev/crl_probe", O_WRONLY | O_CREAT | O_TRUNC);
  return 0;
}
