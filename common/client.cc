#include "common/client.h"

#include "absl/strings/str_cat.h"
#include "common/auth.h"
#include "common/file.h"
#include "common/status.h"

namespace crl {

void BindClientOptions(OptionSet* set, ClientOptions* o) { BindClientOptions(set, o, "", ""); }

void BindClientOptions(OptionSet* set, ClientOptions* o, const std::string& prefix, const std::string& whom) {
  const std::string p = prefix.empty() ? "" : prefix + "_";
  const std::string to = whom.empty() ? "" : " (calls to " + whom + ")";
  set->Add(p + "tls", &o->tls, "connect with TLS" + to);
  set->Add(p + "tls_ca_file", &o->tls_ca_file, "CA bundle (PEM) for the server certificate" + to);
  set->Add(p + "tls_cert_file", &o->tls_cert_file, "client certificate (PEM) for mutual TLS" + to);
  set->Add(p + "tls_key_file", &o->tls_key_file, "client private key (PEM) for mutual TLS" + to);
  set->Add(p + "auth_token_file", &o->auth_token_file, "file with the bearer token to send" + to);
  set->Add(p + "timeout", &o->timeout, "deadline of each call" + to);
}

absl::StatusOr<RpcClient> RpcClient::Create(const std::string& target,
                                            const ClientOptions& options) {
  if (target.empty()) return absl::InvalidArgumentError("target address is empty");
  RpcClient client;
  client.timeout_ = options.timeout;
  if (!options.auth_token_file.empty()) {
    CRL_ASSIGN_OR_RETURN(client.token_, ReadTokenFile(options.auth_token_file));
  }
  std::shared_ptr<grpc::ChannelCredentials> creds;
  if (options.tls) {
    grpc::SslCredentialsOptions ssl;
    if (!options.tls_ca_file.empty()) {
      CRL_ASSIGN_OR_RETURN(ssl.pem_root_certs, ReadFileToString(options.tls_ca_file, "TLS CA file"));
    }
    if (!options.tls_cert_file.empty()) {
      CRL_ASSIGN_OR_RETURN(ssl.pem_cert_chain, ReadFileToString(options.tls_cert_file, "TLS certificate file"));
      CRL_ASSIGN_OR_RETURN(ssl.pem_private_key, ReadFileToString(options.tls_key_file, "TLS key file"));
    }
    creds = grpc::SslCredentials(ssl);
  } else {
    creds = grpc::InsecureChannelCredentials();
  }
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(512 << 20);
  args.SetMaxSendMessageSize(512 << 20);
  client.channel_ = grpc::CreateCustomChannel(target, creds, args);
  return client;
}

void RpcClient::Prepare(grpc::ClientContext* context, absl::Duration timeout) const {
  absl::Duration t = timeout > absl::ZeroDuration() ? timeout : timeout_;
  context->set_deadline(std::chrono::system_clock::now() + absl::ToChronoMilliseconds(t));
  // Metadata rather than call credentials: gRPC refuses call credentials on
  // insecure channels, and loopback deployments run without TLS.
  if (!token_.empty()) context->AddMetadata("authorization", "Bearer " + token_);
}

}  // namespace crl
