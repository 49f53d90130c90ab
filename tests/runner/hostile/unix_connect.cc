// Hostile: tries to talk to host services over unix sockets (a read-only bind
// of the filesystem does not stop connect()). Expected: every attempt fails
// (connect -> EACCES by seccomp; datagram sockets refused; /run masked).
// Writes 1.0 to y[0] if ANY attempt succeeded, else 0.0.
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "crl/kernel.h"

static bool TryConnect(const char* path, int type) {
  int fd = socket(AF_UNIX, type, 0);
  if (fd < 0) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  strncpy(addr.sun_path, path, sizeof(addr.sun_path) - 1);
  bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  if (!ok && type == SOCK_DGRAM) {
    ok = sendto(fd, "x", 1, 0, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 1;
  }
  close(fd);
  return ok;
}

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const char* paths[] = {"/run/systemd/private", "/var/run/docker.sock", "/run/dbus/system_bus_socket",
                         "/dev/log", "/run/systemd/journal/socket"};
  bool any = false;
  for (const char* p : paths) {
    any = any || TryConnect(p, SOCK_STREAM) || TryConnect(p, SOCK_DGRAM);
  }
  static_cast<float*>(args->outputs[0].data)[0] = any ? 1.0f : 0.0f;
  return 0;
}
