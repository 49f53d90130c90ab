// Binding a cpp-httplib server to a --*_listen flag's HOST:PORT (port 0:
// any free one), for the metrics endpoint, the sampler's OpenAI server and
// `crl reward serve`.
#ifndef CRL_COMMON_HTTP_LISTEN_H_
#define CRL_COMMON_HTTP_LISTEN_H_

#include <string>

#include "absl/status/statusor.h"

namespace httplib {
class Server;
}

namespace crl {

// The bound port. INVALID_ARGUMENT when `listen` is not HOST:PORT,
// UNAVAILABLE when it cannot be bound; `what` (the flag) leads the message.
absl::StatusOr<int> BindHttp(httplib::Server* server, const std::string& listen, const std::string& what);

}  // namespace crl

#endif  // CRL_COMMON_HTTP_LISTEN_H_
