// Hostile: fills the disk through /tmp. Expected: RLIMIT_FSIZE (SIGXFSZ) or
// the tmpfs size limit (ENOSPC -> returns 7).
#include <fcntl.h>
#include <unistd.h>

#include "crl/kernel.h"

extern "C" CRL_EXPORT int crl_run(const crl_args*) {
  static char buf[1 << 20];
  int fd = open("/tmp/fill", O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return 6;
  for (;;) {
    if (write(fd, buf, sizeof(buf)) < 0) return 7;
  }
}
