#include "common/http_client.h"

#include <curl/curl.h>

#include <mutex>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace crl {
namespace {

struct Transfer {
  const HttpRequest* request;
  const RequestContext* context;
  HttpResponse* response;
  size_t received = 0;
  bool too_large = false;
  bool stopped = false;
};

size_t OnBody(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t bytes = size * n;
  t->received += bytes;
  if (t->received > t->request->max_response_bytes) {
    t->too_large = true;
    return 0;  // aborts the transfer
  }
  if (t->request->on_body) {
    if (!t->request->on_body(data, bytes)) {
      t->stopped = true;
      return 0;
    }
  } else {
    t->response->body.append(data, bytes);
  }
  return bytes;
}

size_t OnHeader(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  absl::string_view line(data, size * n);
  if (absl::StartsWith(line, "HTTP/")) t->response->headers.clear();  // a new response (redirect, 100)
  const size_t colon = line.find(':');
  if (colon != absl::string_view::npos) {
    t->response->headers[absl::AsciiStrToLower(line.substr(0, colon))] =
        std::string(absl::StripAsciiWhitespace(line.substr(colon + 1)));
  }
  return size * n;
}

int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* t = static_cast<Transfer*>(user);
  return t->context->IsCancelled() ? 1 : 0;  // non-zero aborts
}

class CurlHttpClient final : public HttpClientInterface {
 public:
  CurlHttpClient() {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  }

  absl::StatusOr<HttpResponse> Send(const HttpRequest& r, const RequestContext& context,
                                    TransportError* error) override {
    TransportError ignored;
    if (!error) error = &ignored;
    *error = TransportError::kNone;
    if (absl::Status s = context.Check(); !s.ok()) {
      *error = TransportError::kCancelled;
      return s;
    }
    CURL* curl = curl_easy_init();
    if (!curl) return absl::InternalError("curl_easy_init failed");
    HttpResponse response;
    Transfer t{&r, &context, &response};
    curl_slist* headers = nullptr;
    for (const auto& [k, v] : r.headers) headers = curl_slist_append(headers, absl::StrCat(k, ": ", v).c_str());
    const absl::Duration total = std::min(r.timeout, context.Remaining());
    curl_easy_setopt(curl, CURLOPT_URL, r.url.c_str());
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, r.method.c_str());
    if (r.method != "GET") {
      curl_easy_setopt(curl, CURLOPT_POSTFIELDS, r.body.data());
      curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(r.body.size()));
    }
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(absl::ToInt64Milliseconds(r.connect_timeout)));
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(std::max<int64_t>(1, absl::ToInt64Milliseconds(total))));
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, OnBody);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &t);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, OnHeader);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &t);
    curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, OnProgress);
    curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &t);
    curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    const CURLcode rc = curl_easy_perform(curl);
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
    response.status = static_cast<int>(status);
    if (rc == CURLE_OK || (rc == CURLE_WRITE_ERROR && t.stopped)) return response;
    const std::string what = absl::StrCat(r.url, ": ", curl_easy_strerror(rc));
    if (t.too_large) {
      *error = TransportError::kTooLarge;
      return absl::ResourceExhaustedError(
          absl::StrCat(r.url, ": response larger than ", r.max_response_bytes, " bytes"));
    }
    switch (rc) {
      case CURLE_ABORTED_BY_CALLBACK:
        *error = TransportError::kCancelled;
        return absl::CancelledError(what);
      case CURLE_OPERATION_TIMEDOUT:
        *error = TransportError::kTimeout;
        return absl::DeadlineExceededError(what);
      case CURLE_COULDNT_CONNECT:
      case CURLE_COULDNT_RESOLVE_HOST:
        *error = TransportError::kConnect;
        return absl::UnavailableError(what);
      case CURLE_RECV_ERROR:
      case CURLE_SEND_ERROR:
      case CURLE_GOT_NOTHING:
      case CURLE_PARTIAL_FILE:
        *error = TransportError::kReset;
        return absl::UnavailableError(what);
      default:
        *error = TransportError::kOther;
        return absl::UnavailableError(what);
    }
  }
};

}  // namespace

std::unique_ptr<HttpClientInterface> NewCurlHttpClient() { return std::make_unique<CurlHttpClient>(); }

}  // namespace crl
