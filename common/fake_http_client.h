// An HttpClientInterface for tests: each Send takes the next scripted
// outcome (a response, or a transport error) and records the request.
// Thread-safe.
#ifndef CRL_COMMON_FAKE_HTTP_CLIENT_H_
#define CRL_COMMON_FAKE_HTTP_CLIENT_H_

#include <deque>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/http_client.h"

namespace crl {

class FakeHttpClient final : public HttpClientInterface {
 public:
  void Respond(int status, std::string body, std::map<std::string, std::string> headers = {}) {
    absl::MutexLock lock(&mu_);
    HttpResponse r;
    r.status = status;
    r.body = std::move(body);
    r.headers = std::move(headers);
    script_.push_back({r, TransportError::kNone});
  }
  void Fail(TransportError error) {
    absl::MutexLock lock(&mu_);
    script_.push_back({HttpResponse(), error});
  }

  absl::StatusOr<HttpResponse> Send(const HttpRequest& request, const RequestContext&,
                                    TransportError* error) override {
    absl::MutexLock lock(&mu_);
    requests_.push_back(request);
    if (script_.empty()) {
      if (error) *error = TransportError::kConnect;
      return absl::UnavailableError("fake http: nothing scripted");
    }
    auto [response, failure] = script_.front();
    script_.pop_front();
    if (error) *error = failure;
    switch (failure) {
      case TransportError::kNone: break;
      case TransportError::kTimeout: return absl::DeadlineExceededError("fake timeout");
      case TransportError::kTooLarge: return absl::ResourceExhaustedError("fake: too large");
      case TransportError::kCancelled: return absl::CancelledError("fake: cancelled");
      default: return absl::UnavailableError("fake transport error");
    }
    if (request.on_body) request.on_body(response.body.data(), response.body.size());
    return response;
  }

  std::vector<HttpRequest> requests() const {
    absl::MutexLock lock(&mu_);
    return requests_;
  }

 private:
  mutable absl::Mutex mu_;
  std::deque<std::pair<HttpResponse, TransportError>> script_ ABSL_GUARDED_BY(mu_);
  std::vector<HttpRequest> requests_ ABSL_GUARDED_BY(mu_);
};

}  // namespace crl

#endif  // CRL_COMMON_FAKE_HTTP_CLIENT_H_
