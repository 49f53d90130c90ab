// Outgoing calls: channels with optional TLS, and client contexts that always
// carry a deadline (and the bearer token when one is configured).
#ifndef CRL_COMMON_CLIENT_H_
#define CRL_COMMON_CLIENT_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/options.h"

namespace crl {

struct ClientOptions {
  // Use TLS; server certificates are checked against tls_ca_file (or the
  // system roots when empty).
  bool tls = false;
  std::string tls_ca_file;
  // Client certificate and key for mutual TLS.
  std::string tls_cert_file;
  std::string tls_key_file;
  // Bearer token file sent with every call; empty: none.
  std::string auth_token_file;
  // Deadline of each call unless the caller gives one.
  absl::Duration timeout = absl::Seconds(30);
};

// Binds --tls, --tls_ca_file, --tls_cert_file, --tls_key_file,
// --auth_token_file, --timeout.
void BindClientOptions(OptionSet* set, ClientOptions* options);

// A connected-on-demand channel to HOST:PORT.
class RpcClient {
 public:
  static absl::StatusOr<RpcClient> Create(const std::string& target, const ClientOptions& options);
  const std::shared_ptr<grpc::Channel>& channel() const { return channel_; }
  // Sets the deadline (options.timeout unless `timeout` > 0) and the token.
  void Prepare(grpc::ClientContext* context, absl::Duration timeout = absl::ZeroDuration()) const;

 private:
  std::shared_ptr<grpc::Channel> channel_;
  std::string token_;
  absl::Duration timeout_;
};

}  // namespace crl

#endif  // CRL_COMMON_CLIENT_H_
