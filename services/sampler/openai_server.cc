#include "services/sampler/openai_server.h"

#include <httplib.h>

#include <atomic>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/http_listen.h"
#include "common/clock.h"
#include "common/file.h"
#include "common/logging.h"
#include "common/status.h"
#include "services/sampler/openai_format.h"

namespace crl::sampler {
namespace {

using nlohmann::json;

void SendError(httplib::Response& res, int status, const std::string& message, const std::string& type,
               const std::string& param = "") {
  res.status = status;
  res.set_content(ApiError(message, type, param).dump(), "application/json");
}

// The HTTP status and OpenAI error type of a failed Sample.
void SendStatus(httplib::Response& res, const absl::Status& s) {
  const std::string m(s.message());
  switch (s.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange: {
      // Our messages start with the field: "temperature: must be ...".
      const size_t colon = m.find(':');
      SendError(res, 400, m, "invalid_request_error", colon == std::string::npos ? "" : m.substr(0, colon));
      return;
    }
    case absl::StatusCode::kNotFound: SendError(res, 404, m, "invalid_request_error", "model"); return;
    case absl::StatusCode::kResourceExhausted: SendError(res, 429, m, "rate_limit_error"); return;
    case absl::StatusCode::kUnavailable: SendError(res, 503, m, "server_error"); return;
    case absl::StatusCode::kDeadlineExceeded: SendError(res, 504, m, "timeout"); return;
    default: SendError(res, 500, m, "server_error"); return;
  }
}

std::atomic<int64_t> request_counter{0};

}  // namespace

OpenAiServer::~OpenAiServer() { Stop(); }

void OpenAiServer::Stop() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

absl::StatusOr<std::unique_ptr<OpenAiServer>> OpenAiServer::Start(const OpenAiServerOptions& o,
                                                                  SamplerBackendInterface* backend,
                                                                  SamplerMetrics* metrics) {
  std::string token;
  if (!o.auth_token_file.empty()) {
    CRL_ASSIGN_OR_RETURN(std::string t, ReadFileToString(o.auth_token_file, "OpenAI API token file"));
    token = std::string(absl::StripAsciiWhitespace(t));
    if (token.empty()) return absl::InvalidArgumentError("openai_auth_token_file: the file is empty");
  }
  std::unique_ptr<OpenAiServer> s(new OpenAiServer());
  s->server_ = std::make_unique<httplib::Server>();
  httplib::Server& srv = *s->server_;
  const int threads = std::max(1, o.threads);
  srv.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  srv.set_payload_max_length(o.max_body_bytes);
  srv.set_read_timeout(60, 0);
  srv.set_write_timeout(60, 0);
  auto authorized = [token](const httplib::Request& req, httplib::Response& res) {
    if (token.empty()) return true;
    const std::string h = req.get_header_value("Authorization");
    if (h == "Bearer " + token) return true;
    SendError(res, 401, h.empty() ? "missing bearer token" : "invalid bearer token", "authentication_error");
    return false;
  };

  srv.Get("/v1/models", [backend, authorized](const httplib::Request& req, httplib::Response& res) {
    if (!authorized(req, res)) return;
    json data = json::array();
    const int64_t created = absl::ToUnixSeconds(absl::Now());
    for (const v1::Policy& p : backend->Policies()) {
      data.push_back({{"id", p.name()}, {"object", "model"}, {"created", created}, {"owned_by", "crl"},
                      {"root", p.base_model()}, {"parent", nullptr}, {"crl_policy_version", p.version()}});
    }
    res.set_content(json({{"object", "list"}, {"data", data}}).dump(), "application/json");
  });

  auto complete = [backend, metrics, authorized, o](ApiKind kind) {
    return [=](const httplib::Request& req, httplib::Response& res) {
      if (!authorized(req, res)) return;
      ApiRequestOptions ro;
      auto request = ParseApiRequest(req.body, kind, &ro);
      if (!request.ok()) {
        SendStatus(res, request.status());
        return;
      }
      RequestContext context(RealClock::Get(), absl::Now() + o.request_timeout);
      auto r = backend->Sample(*request, context);
      if (metrics) metrics->ObserveRequest("libtorch", r.status(), r.ok() ? &*r : nullptr);
      if (!r.ok()) {
        SendStatus(res, r.status());
        return;
      }
      const std::string id = absl::StrCat(kind == ApiKind::kChat ? "chatcmpl-crl-" : "cmpl-crl-",
                                          request_counter.fetch_add(1));
      const int64_t created = absl::ToUnixSeconds(absl::Now());
      const std::string model = ro.model.empty() ? r->policy() : ro.model;
      TokenNamer name = [backend, ids = ro.token_ids](int token) {
        return ids ? absl::StrCat("token_id:", token) : backend->TokenText(token);
      };
      if (ro.stream) {
        auto text = std::make_shared<std::string>(ApiStreamText(*r, kind, model, id, created, ro.logprobs, name));
        res.set_chunked_content_provider("text/event-stream", [text](size_t, httplib::DataSink& sink) {
          sink.write(text->data(), text->size());
          sink.done();
          return true;
        });
        return;
      }
      res.set_content(ApiResponseJson(*r, kind, model, id, created, ro.logprobs, name).dump(),
                      "application/json");
    };
  };
  srv.Post("/v1/chat/completions", complete(ApiKind::kChat));
  srv.Post("/v1/completions", complete(ApiKind::kCompletions));
  srv.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.status == 404 && res.body.empty()) SendError(res, 404, "no such route", "invalid_request_error");
  });

  CRL_ASSIGN_OR_RETURN(s->port_, BindHttp(&srv, o.listen, "openai_listen"));
  httplib::Server* raw = s->server_.get();
  s->thread_ = std::thread([raw] { raw->listen_after_bind(); });
  return s;
}

}  // namespace crl::sampler
