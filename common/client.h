// Outgoing calls: channels with optional TLS, and client contexts that always
// carry a deadline (and the bearer token when one is configured).
#ifndef CRL_COMMON_CLIENT_H_
#define CRL_COMMON_CLIENT_H_

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "common/context.h"
#include "common/grpc_status.h"
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
// The same for calls a service makes to another one, named after it:
// prefix "worker" binds --worker_tls, --worker_auth_token_file, ...; `whom`
// ends each help line ("the worker").
void BindClientOptions(OptionSet* set, ClientOptions* options, const std::string& prefix,
                       const std::string& whom);

// A connected-on-demand channel to HOST:PORT. Thread-safe.
class RpcClient {
 public:
  static absl::StatusOr<RpcClient> Create(const std::string& target, const ClientOptions& options);
  const std::shared_ptr<grpc::Channel>& channel() const { return channel_; }
  // Sets the deadline (options.timeout unless `timeout` > 0) and the token.
  void Prepare(grpc::ClientContext* context, absl::Duration timeout = absl::ZeroDuration()) const;

  // One unary call through a stub's callback API, on behalf of `request`:
  // its deadline is the sooner of the request's and the client's timeout,
  // and cancelling the request cancels the call. `start` starts the call,
  // e.g. [&](auto* c, auto* req, auto* resp, auto done) {
  //        stub->async()->Evaluate(c, req, resp, std::move(done)); }
  // Returns the response, or the call's status bridged to absl.
  template <typename Response, typename Request, typename Start>
  absl::StatusOr<Response> Call(const RequestContext& request, const Request& message,
                                Start start) const {
    if (absl::Status live = request.Check(); !live.ok()) return live;
    grpc::ClientContext context;
    Prepare(&context, std::min(timeout_, request.Remaining()));
    Response response;
    absl::Notification done;
    grpc::Status status;
    start(&context, &message, &response, [&](grpc::Status s) {
      status = std::move(s);
      done.Notify();
    });
    while (!done.WaitForNotificationWithTimeout(kCancelPoll)) {
      if (request.IsCancelled()) context.TryCancel();
    }
    if (!status.ok()) return FromGrpcStatus(status);
    return response;
  }

  // Reads a server stream on behalf of `request` (no deadline of its own
  // beyond the request's: a stream may live for days): `open` starts it,
  // e.g. [&](grpc::ClientContext* c) { return stub->WatchRun(c, message); },
  // and `on_message` sees each message. Returns the stream's final status,
  // or CANCELLED when the request was cancelled.
  template <typename Message, typename Open, typename OnMessage>
  absl::Status ReadStream(const RequestContext& request, Open open, OnMessage on_message) const {
    if (absl::Status live = request.Check(); !live.ok()) return live;
    grpc::ClientContext context;
    const absl::Duration left = request.Remaining();
    Prepare(&context, left == absl::InfiniteDuration() ? absl::Hours(24 * 30) : left);
    auto reader = open(&context);
    absl::Notification finished;
    std::thread canceller([&] {
      while (!finished.WaitForNotificationWithTimeout(kCancelPoll)) {
        if (request.IsCancelled()) {
          context.TryCancel();
          return;
        }
      }
    });
    Message m;
    while (reader->Read(&m)) on_message(m);
    grpc::Status status = reader->Finish();
    finished.Notify();
    canceller.join();
    if (request.IsCancelled()) return absl::CancelledError("stream cancelled");
    return FromGrpcStatus(status);
  }

 private:
  // How often a call in flight looks at its request's cancellation.
  static constexpr absl::Duration kCancelPoll = absl::Milliseconds(100);
  std::shared_ptr<grpc::Channel> channel_;
  std::string token_;
  absl::Duration timeout_;
};

}  // namespace crl

#endif  // CRL_COMMON_CLIENT_H_
