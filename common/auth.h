// Bearer-token authentication for every RPC of a crl service.
//
// The token travels as `authorization: Bearer <token>` metadata. Health checks
// and reflection are exempt: kubelet gRPC probes cannot send metadata. Use TLS
// when the token crosses a network you do not own.
#ifndef CRL_COMMON_AUTH_H_
#define CRL_COMMON_AUTH_H_

#include <grpcpp/grpcpp.h>

#include <string>

#include "absl/status/statusor.h"

namespace crl {

// Reads a token file (surrounding whitespace stripped). Empty files are errors.
absl::StatusOr<std::string> ReadTokenFile(const std::string& path);

// Thread-safe (immutable after construction).
class Authenticator {
 public:
  // An empty token disables authentication.
  explicit Authenticator(std::string token = "") : token_(std::move(token)) {}
  bool enabled() const { return !token_.empty(); }
  // OK, or UNAUTHENTICATED saying what is wrong (missing or wrong token).
  // Compares in constant time.
  grpc::Status Check(const grpc::ServerContextBase& context) const;

 private:
  std::string token_;
};

}  // namespace crl

#endif  // CRL_COMMON_AUTH_H_
