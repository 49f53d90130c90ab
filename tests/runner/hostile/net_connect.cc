// Hostile: tries to reach the network (TCP to 127.0.0.1:22 and 1.1.1.1:53).
// Expected: the kRunner seccomp profile kills the process at socket(AF_INET).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "crl/kernel.h"

extern "C" CRL_EXPORT int crl_run(const crl_args*) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 2;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(53);
  inet_pton(AF_INET, "1.1.1.1", &addr.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) return 0;
  return 3;
}
