// Outgoing HTTP (the sampler's OpenAI-compatible backend, the orchestrator's
// judge), behind an interface so callers' retry logic is tested against a
// fake (fake_http_client.h). The real one is libcurl: one
// request per call, a connect and a total timeout, a cap on the response
// size, streamed bodies handed over as they arrive, and cancellation of the
// request's context honoured while the transfer runs.
#ifndef CRL_COMMON_HTTP_CLIENT_H_
#define CRL_COMMON_HTTP_CLIENT_H_

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/context.h"

namespace crl {

struct HttpRequest {
  std::string method = "POST";
  std::string url;
  std::map<std::string, std::string> headers;
  std::string body;
  absl::Duration connect_timeout = absl::Seconds(5);
  // The whole exchange (also bounded by the context's deadline).
  absl::Duration timeout = absl::Seconds(120);
  // Largest response body accepted; beyond it the transfer stops.
  size_t max_response_bytes = 64 << 20;
  // When set, body bytes are handed here as they arrive (server-sent
  // events) instead of being collected; returning false stops the transfer.
  std::function<bool(const char* data, size_t size)> on_body;
};

struct HttpResponse {
  int status = 0;
  // Header names lower-cased.
  std::map<std::string, std::string> headers;
  std::string body;
};

// The outcome of a transfer that got no complete HTTP response.
enum class TransportError { kNone, kConnect, kTimeout, kReset, kTooLarge, kCancelled, kOther };

// Thread-safe implementations.
class HttpClientInterface {
 public:
  virtual ~HttpClientInterface() = default;
  // A response of any status is OK (the caller reads the status); a
  // transport failure is UNAVAILABLE (connect, reset), DEADLINE_EXCEEDED
  // (timeout), RESOURCE_EXHAUSTED (too large) or CANCELLED, with
  // `error` (may be null) saying which.
  virtual absl::StatusOr<HttpResponse> Send(const HttpRequest& request, const RequestContext& context,
                                            TransportError* error) = 0;
};

// libcurl. Creates one easy handle per call (connections are not reused:
// endpoints are few and requests long).
std::unique_ptr<HttpClientInterface> NewCurlHttpClient();

}  // namespace crl

#endif  // CRL_COMMON_HTTP_CLIENT_H_
