// Hostile: looks for the worker's secrets. Writes one flag per probe into y:
//   y[0] = 1 if getenv("CRL_SECRET_TEST") is set
//   y[1] = 1 if /proc/1/environ is readable and holds CRL_SECRET_TEST
//   y[2] = 1 if /proc/1/mem (init: a forked copy of the worker) is readable
//   y[3] = number of processes visible in /proc (expect 2: init, us)
//   y[4] = 1 if /etc/shadow is readable
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crl/kernel.h"

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  float* y = static_cast<float*>(args->outputs[0].data);
  y[0] = getenv("CRL_SECRET_TEST") != nullptr ? 1.0f : 0.0f;
  y[1] = 0;
  int fd = open("/proc/1/environ", O_RDONLY);
  if (fd >= 0) {
    static char buf[1 << 16];
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    if (n > 0 && memmem(buf, n, "CRL_SECRET_TEST", 15) != nullptr) y[1] = 1;
    close(fd);
  }
  y[2] = 0;
  unsigned long start = 0;
  fd = open("/proc/1/maps", O_RDONLY);
  if (fd >= 0) {
    char line[128] = {0};
    if (read(fd, line, sizeof(line) - 1) > 0) start = strtoul(line, nullptr, 16);
    close(fd);
  }
  fd = open("/proc/1/mem", O_RDONLY);
  if (fd >= 0) {
    char c;
    y[2] = (start != 0 && pread(fd, &c, 1, static_cast<off_t>(start)) == 1) ? 1.0f : 0.5f;
    close(fd);  // 0.5: open worked but nothing could be read
  }
  int procs = 0;
  if (DIR* d = opendir("/proc")) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] >= '0' && e->d_name[0] <= '9') ++procs;
    }
    closedir(d);
  }
  y[3] = static_cast<float>(procs);
  fd = open("/etc/shadow", O_RDONLY);
  y[4] = fd >= 0 ? 1.0f : 0.0f;
  if (fd >= 0) close(fd);
  return 0;
}
