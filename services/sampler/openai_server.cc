#include "services/sampler/openai_server.h"

#include <httplib.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
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

struct Failure {
  int http = 500;
  json error;
};

// The HTTP status and OpenAI error of a failed Sample.
Failure FailureOf(const absl::Status& s) {
  const std::string m(s.message());
  switch (s.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange: {
      // Our messages start with the field: "temperature: must be ...".
      const size_t colon = m.find(':');
      return {400, ApiError(m, "invalid_request_error", colon == std::string::npos ? "" : m.substr(0, colon))};
    }
    case absl::StatusCode::kNotFound: return {404, ApiError(m, "invalid_request_error", "model")};
    case absl::StatusCode::kResourceExhausted: return {429, ApiError(m, "rate_limit_error", "")};
    case absl::StatusCode::kUnavailable: return {503, ApiError(m, "server_error", "")};
    case absl::StatusCode::kDeadlineExceeded: return {504, ApiError(m, "timeout", "")};
    default: return {500, ApiError(m, "server_error", "")};
  }
}

void SendStatus(httplib::Response& res, const absl::Status& s) {
  Failure f = FailureOf(s);
  res.status = f.http;
  res.set_content(f.error.dump(), "application/json");
}

// A streamed request: the backend samples on a thread of its own and adds
// each piece's events here; the HTTP thread sends them as they come.
struct StreamState {
  explicit StreamState(absl::Time deadline) : context(RealClock::Get(), deadline) {}
  RequestContext context;
  absl::Mutex mu;
  std::string events ABSL_GUARDED_BY(mu);  // not yet sent
  bool finished ABSL_GUARDED_BY(mu) = false;
  absl::Status failed ABSL_GUARDED_BY(mu);
  std::thread thread;

  bool Ready() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return finished || !events.empty(); }
};

// Starts `request` streaming. A request that fails before its first piece
// (a bad parameter, an unknown policy) gets an HTTP error as a whole reply
// would; a failure after it ends the stream with an error event; a client
// that goes away cancels the request.
void Stream(SamplerBackendInterface* backend, SamplerMetrics* metrics, const v1::SampleRequest& request,
            const ApiReply& reply, absl::Duration timeout, httplib::Response& res) {
  auto state = std::make_shared<StreamState>(absl::Now() + timeout);
  state->thread = std::thread([state, backend, metrics, request, reply] {
    std::vector<bool> begun;
    auto r = backend->SampleStream(request, state->context, [&](int index, const v1::Completion& piece) {
      if (index >= static_cast<int>(begun.size())) begun.resize(index + 1, false);
      std::string events = ApiStreamEvents(piece, index, !begun[index], reply);
      begun[index] = true;
      absl::MutexLock lock(&state->mu);
      state->events += events;
    });
    if (metrics) metrics->ObserveRequest("libtorch", r.status(), r.ok() ? &*r : nullptr);
    absl::MutexLock lock(&state->mu);
    if (r.ok()) state->events += ApiStreamEnd(*r, reply);
    state->failed = r.status();
    state->finished = true;
  });
  absl::Status early;
  {
    absl::MutexLock lock(&state->mu);
    state->mu.Await(absl::Condition(state.get(), &StreamState::Ready));
    if (state->events.empty()) early = state->failed;
  }
  if (!early.ok()) {
    state->thread.join();
    SendStatus(res, early);
    return;
  }
  res.set_chunked_content_provider(
      "text/event-stream",
      [state](size_t, httplib::DataSink& sink) {
        for (;;) {
          std::string out;
          bool finished = false;
          {
            absl::MutexLock lock(&state->mu);
            state->mu.AwaitWithTimeout(absl::Condition(state.get(), &StreamState::Ready), absl::Milliseconds(250));
            out.swap(state->events);
            finished = state->finished;
            if (finished && !state->failed.ok()) out += ApiStreamError(FailureOf(state->failed).error);
          }
          if ((!out.empty() && !sink.write(out.data(), out.size())) || !sink.is_writable()) {
            state->context.Cancel();  // the client went away
            return false;
          }
          if (finished) {
            sink.done();
            return true;
          }
        }
      },
      [state](bool) {
        state->context.Cancel();  // a no-op once finished
        if (state->thread.joinable()) state->thread.join();
      });
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
      ApiReply reply;
      reply.kind = kind;
      reply.id = absl::StrCat(kind == ApiKind::kChat ? "chatcmpl-crl-" : "cmpl-crl-", request_counter.fetch_add(1));
      reply.created = absl::ToUnixSeconds(absl::Now());
      reply.logprobs = ro.logprobs;
      reply.name = [backend, ids = ro.token_ids](int token) {
        return ids ? absl::StrCat("token_id:", token) : backend->TokenText(token);
      };
      reply.model = ro.model;
      if (reply.model.empty()) {  // the policy that answers
        const std::vector<v1::Policy> policies = backend->Policies();
        if (!policies.empty()) reply.model = policies[0].name();
      }
      if (ro.stream) {
        Stream(backend, metrics, *request, reply, o.request_timeout, res);
        return;
      }
      RequestContext context(RealClock::Get(), absl::Now() + o.request_timeout);
      auto r = backend->Sample(*request, context);
      if (metrics) metrics->ObserveRequest("libtorch", r.status(), r.ok() ? &*r : nullptr);
      if (!r.ok()) {
        SendStatus(res, r.status());
        return;
      }
      res.set_content(ApiResponseJson(*r, reply).dump(), "application/json");
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
