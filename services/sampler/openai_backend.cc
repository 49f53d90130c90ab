#include "services/sampler/openai_backend.h"

#include <algorithm>
#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "common/backoff.h"
#include "common/file.h"
#include "common/logging.h"
#include "common/status.h"

namespace crl::sampler {
namespace {

using nlohmann::json;

// The server's message from an error body, shortened.
std::string ErrorMessage(const HttpResponse& r) {
  json j = json::parse(r.body, nullptr, false);
  std::string m;
  if (j.is_object() && j.contains("error")) {
    const json& e = j["error"];
    m = e.is_object() ? e.value("message", e.dump()) : e.dump();
  } else {
    m = r.body;
  }
  if (m.size() > 300) m = m.substr(0, 300) + "...";
  return m;
}

// The server's alternatives at each token, at most `k`, where it named them
// by id (vLLM's return_tokens_as_token_ids, crl-sampler's own server): a
// name that is only text would need a tokenizer's guess at its id, so a
// choice with any such name gets none.
void AddTopLogprobs(const ApiChoice& ch, int k, v1::Completion* c) {
  if (k <= 0 || ch.top.size() != ch.tokens.size()) return;
  std::vector<v1::TopLogprobs> tops(ch.top.size());
  for (size_t i = 0; i < ch.top.size(); ++i) {
    for (const auto& [name, logprob] : ch.top[i]) {
      if (tops[i].token_ids_size() == k) break;
      int id;
      if (!ParseTokenIdName(name, &id)) return;
      tops[i].add_token_ids(id);
      tops[i].add_logprobs(logprob);
    }
  }
  for (auto& t : tops) *c->add_top_logprobs() = std::move(t);
}

}  // namespace

absl::Duration ParseRetryAfter(const std::string& value, absl::Time now) {
  const std::string v(absl::StripAsciiWhitespace(value));
  double seconds;
  if (absl::SimpleAtod(v, &seconds) && seconds >= 0) return absl::Seconds(std::min(seconds, 3600.0));
  absl::Time at;
  std::string err;
  if (absl::ParseTime("%a, %d %b %Y %H:%M:%S GMT", v, &at, &err) && at > now) {
    return std::min(at - now, absl::Hours(1));
  }
  return absl::ZeroDuration();
}

OpenAiBackend::OpenAiBackend(OpenAiBackendOptions options, HttpClientInterface* http,
                             ClockInterface* clock, SamplerMetrics* metrics, uint64_t seed)
    : options_(std::move(options)), http_(http), clock_(clock), metrics_(metrics), rng_(seed) {}

absl::StatusOr<std::unique_ptr<OpenAiBackend>> OpenAiBackend::Create(const OpenAiBackendOptions& o,
                                                                      HttpClientInterface* http,
                                                                      ClockInterface* clock,
                                                                      SamplerMetrics* metrics,
                                                                      uint64_t seed) {
  if (o.endpoints.empty()) return absl::InvalidArgumentError("endpoints: at least one base URL is needed");
  if (o.model.empty()) return absl::InvalidArgumentError("endpoint_model: the served model name is needed");
  if (o.api != "chat" && o.api != "completions") {
    return absl::InvalidArgumentError(absl::StrCat("endpoint_api: '", o.api, "' is not chat or completions"));
  }
  if (o.max_attempts < 1 || o.max_concurrency_per_endpoint < 1) {
    return absl::InvalidArgumentError("endpoint_attempts / endpoint_concurrency: must be at least 1");
  }
  std::unique_ptr<OpenAiBackend> b(new OpenAiBackend(o, http, clock, metrics, seed));
  if (b->options_.name.empty()) b->options_.name = o.model;
  b->kind_ = o.api == "chat" ? ApiKind::kChat : ApiKind::kCompletions;
  if (!o.api_key_file.empty()) {
    CRL_ASSIGN_OR_RETURN(std::string key, ReadFileToString(o.api_key_file, "API key file"));
    b->api_key_ = std::string(absl::StripAsciiWhitespace(key));
  } else if (const char* env = std::getenv(o.api_key_env.c_str())) {
    b->api_key_ = env;
  }
  if (!o.tokenizer.empty()) {
    CRL_ASSIGN_OR_RETURN(b->tokenizer_, policy::LoadTokenizer(o.tokenizer));
  }
  absl::MutexLock lock(&b->mu_);
  for (const auto& e : o.endpoints) {
    b->endpoints_.push_back({std::string(absl::StripSuffix(e, "/")), 0});
  }
  b->target_ = {o.model, "0"};
  return b;
}

std::map<std::string, std::string> OpenAiBackend::Headers() const {
  std::map<std::string, std::string> h = {{"Content-Type", "application/json"}};
  if (!api_key_.empty()) h["Authorization"] = "Bearer " + api_key_;
  return h;
}

std::string OpenAiBackend::TokenText(int id) const {
  return tokenizer_ ? tokenizer_->Decode({id}) : "";
}

std::vector<v1::Policy> OpenAiBackend::Policies() const {
  absl::MutexLock lock(&mu_);
  v1::Policy p;
  p.set_name(options_.name);
  p.set_kind("openai-http");
  p.set_version(target_.version);
  for (const auto& e : endpoints_) p.add_endpoints(e.base);
  p.set_adapter(target_.model != options_.model);
  p.set_base_model(options_.model);
  return {p};
}

int OpenAiBackend::Acquire(int avoid, const RequestContext& context, absl::Status* status) {
  absl::MutexLock lock(&mu_);
  ++waiting_;
  if (metrics_) metrics_->queue_depth.Set(waiting_);
  int chosen = -1;
  auto free = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    chosen = -1;
    for (int i = 0; i < static_cast<int>(endpoints_.size()); ++i) {
      if (endpoints_[i].in_flight >= options_.max_concurrency_per_endpoint) continue;
      const bool better = chosen < 0 || (chosen == avoid && i != avoid) ||
                          (i != avoid && endpoints_[i].in_flight < endpoints_[chosen].in_flight);
      if (better) chosen = i;
    }
    return chosen >= 0;
  };
  while (!free()) {
    if (absl::Status s = context.Check(); !s.ok()) {
      --waiting_;
      *status = s;
      return -1;
    }
    mu_.AwaitWithTimeout(absl::Condition(&free), absl::Milliseconds(100));
  }
  ++endpoints_[chosen].in_flight;
  --waiting_;
  if (metrics_) metrics_->queue_depth.Set(waiting_);
  return chosen;
}

void OpenAiBackend::Release(int index) {
  absl::MutexLock lock(&mu_);
  --endpoints_[index].in_flight;
}

absl::Duration OpenAiBackend::Backoff(int attempt, absl::Duration retry_after) {
  // Full jitter: uniform in [0, min(max, initial * 2^attempt)].
  const absl::Duration cap = crl::Backoff::Nth(options_.initial_backoff, options_.max_backoff, attempt);
  double u;
  {
    absl::MutexLock lock(&mu_);
    u = std::uniform_real_distribution<double>(0, 1)(rng_);
  }
  return std::max(retry_after, cap * u);
}

absl::StatusOr<ApiResult> OpenAiBackend::Attempt(int endpoint, const std::string& body,
                                                 const RequestContext& context,
                                                 absl::Status* retryable, std::string* cause,
                                                 absl::Duration* retry_after) {
  std::string base;
  {
    absl::MutexLock lock(&mu_);
    base = endpoints_[endpoint].base;
  }
  HttpRequest req;
  req.url = base + (kind_ == ApiKind::kChat ? "/chat/completions" : "/completions");
  req.headers = Headers();
  req.body = body;
  req.connect_timeout = options_.connect_timeout;
  req.timeout = options_.request_timeout;
  req.max_response_bytes = options_.max_response_bytes;
  ApiStream stream(kind_);
  if (options_.stream) {
    req.on_body = [&stream](const char* d, size_t n) {
      stream.Feed(d, n);
      return true;
    };
  }
  TransportError error = TransportError::kNone;
  auto r = http_->Send(req, context, &error);
  auto fail = [&](const std::string& why, const std::string& code) {
    if (metrics_) metrics_->endpoint_errors.Add({{"code", code}}).Increment();
    *cause = why;
  };
  if (!r.ok()) {
    switch (error) {
      case TransportError::kConnect: fail("connect", "connect"); break;
      case TransportError::kTimeout: fail("timeout", "timeout"); break;
      case TransportError::kReset: fail("reset", "reset"); break;
      case TransportError::kTooLarge: fail("too_large", "too_large"); return r.status();
      case TransportError::kCancelled: return r.status();
      default: fail("transport", "transport"); break;
    }
    if (context.IsCancelled()) return r.status();
    *retryable = absl::UnavailableError(absl::StrCat(base, ": ", r.status().message()));
    return *retryable;
  }
  const int status = r->status;
  if (status == 429 || status >= 500) {
    fail(status == 429 ? "http_429" : "http_5xx", std::to_string(status));
    auto it = r->headers.find("retry-after");
    if (it != r->headers.end()) *retry_after = ParseRetryAfter(it->second, clock_->Now());
    *retryable = absl::UnavailableError(absl::StrCat(base, ": HTTP ", status, ": ",
                                                     options_.stream ? "" : ErrorMessage(*r)));
    return *retryable;
  }
  if (status == 404) {
    fail("http_404", "404");
    return absl::NotFoundError(absl::StrCat(base, ": HTTP 404: ", ErrorMessage(*r)));
  }
  if (status < 200 || status >= 300) {
    fail("http_4xx", std::to_string(status));
    return absl::InvalidArgumentError(absl::StrCat(base, ": HTTP ", status, ": ", ErrorMessage(*r)));
  }
  auto parsed = options_.stream ? stream.Finish() : ParseApiResponse(r->body, kind_);
  if (!parsed.ok()) {
    fail("malformed", "malformed");
    *retryable = absl::UnavailableError(absl::StrCat(base, ": ", parsed.status().message()));
    return *retryable;
  }
  return parsed;
}

absl::StatusOr<v1::SampleResponse> OpenAiBackend::Sample(const v1::SampleRequest& request,
                                                         const RequestContext& context) {
  if (!request.policy().empty() && request.policy() != options_.name) {
    return absl::NotFoundError(absl::StrCat("policy '", request.policy(), "' is not served here (",
                                            options_.name, " is)"));
  }
  const absl::Time start = clock_->MonotonicNow();
  Target target;
  {
    absl::MutexLock lock(&mu_);
    target = target_;
  }
  const int n = std::max(1, request.num_completions());
  const std::string body = BuildApiRequest(request, target.model, kind_, options_.stream,
                                           options_.extensions, options_.default_max_tokens);
  absl::Status last = absl::UnavailableError("no attempt made");
  std::vector<std::string> tried;
  int previous = -1;
  for (int attempt = 0; attempt < options_.max_attempts; ++attempt) {
    absl::Status acquire;
    const int e = Acquire(previous, context, &acquire);
    if (e < 0) return acquire;
    absl::Status retryable;
    std::string cause;
    absl::Duration retry_after = absl::ZeroDuration();
    auto result = Attempt(e, body, context, &retryable, &cause, &retry_after);
    Release(e);
    previous = e;
    {
      absl::MutexLock lock(&mu_);
      tried.push_back(endpoints_[e].base);
    }
    if (result.ok() && static_cast<int>(result->choices.size()) < n) {
      retryable = absl::UnavailableError(absl::StrCat(tried.back(), ": ", result->choices.size(),
                                                      " choices for n = ", n));
      cause = "malformed";
    } else if (result.ok()) {
      v1::SampleResponse r;
      r.set_policy(options_.name);
      r.set_policy_version(target.version);
      r.set_prompt_tokens(result->prompt_tokens);
      r.set_attempts(attempt + 1);
      std::sort(result->choices.begin(), result->choices.end(),
                [](const ApiChoice& a, const ApiChoice& b) { return a.index < b.index; });
      int tokens = 0;
      for (int i = 0; i < n; ++i) {
        const ApiChoice& ch = result->choices[i];
        v1::Completion* c = r.add_completions();
        c->set_text(ch.text);
        c->set_finish_reason(ch.finish_reason);
        c->set_policy_version(target.version);
        if (!ch.token_ids.empty() && ch.token_ids.size() == ch.tokens.size()) {
          for (int id : ch.token_ids) c->add_token_ids(id);
          for (float lp : ch.logprobs) c->add_token_logprobs(lp);
          c->set_token_source("server");
          AddTopLogprobs(ch, request.params().top_logprobs(), c);
        } else if (tokenizer_) {
          std::vector<int> ids = tokenizer_->Encode(ch.text, /*parse_special=*/false);
          for (int id : ids) c->add_token_ids(id);
          if (ids.size() == ch.logprobs.size()) {
            for (float lp : ch.logprobs) c->add_token_logprobs(lp);
          }
          c->set_token_source("tokenized");
        } else {
          for (float lp : ch.logprobs) c->add_token_logprobs(lp);
          c->set_token_source("none");
        }
        tokens += c->token_ids_size() > 0 ? c->token_ids_size() : static_cast<int>(ch.logprobs.size());
      }
      r.set_completion_tokens(result->completion_tokens > 0 ? result->completion_tokens : tokens);
      const double seconds = absl::ToDoubleSeconds(clock_->MonotonicNow() - start);
      r.mutable_timings()->set_total_seconds(seconds);
      r.mutable_timings()->set_first_token_seconds(seconds);
      return r;
    } else if (retryable.ok()) {
      return result.status();  // not worth retrying (4xx, too large, cancelled)
    }
    last = retryable;
    if (attempt + 1 == options_.max_attempts) break;
    if (metrics_) metrics_->retries.Add({{"cause", cause}}).Increment();
    const absl::Duration wait = Backoff(attempt, retry_after);
    if (wait >= context.Remaining()) break;  // the deadline comes first
    // Sleep in slices so a cancelled request stops waiting.
    for (absl::Duration left = wait; left > absl::ZeroDuration();) {
      if (absl::Status s = context.Check(); !s.ok()) return s;
      const absl::Duration slice = std::min(left, absl::Milliseconds(100));
      clock_->SleepFor(slice);
      left -= slice;
    }
  }
  return absl::UnavailableError(absl::StrCat("no completion after ", tried.size(), " attempt(s) on ",
                                             absl::StrJoin(tried, ", "), "; last error: ",
                                             last.message()));
}

absl::Status OpenAiBackend::PostAll(const std::string& path, const std::string& body,
                                    const RequestContext& context) {
  std::vector<std::string> bases;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& e : endpoints_) bases.push_back(e.base);
  }
  for (const std::string& base : bases) {
    HttpRequest req;
    req.url = base + path;
    req.headers = Headers();
    req.body = body;
    req.connect_timeout = options_.connect_timeout;
    req.timeout = absl::Seconds(120);
    auto r = http_->Send(req, context, nullptr);
    if (!r.ok()) return absl::UnavailableError(absl::StrCat(base, path, ": ", r.status().message()));
    if (r->status < 200 || r->status >= 300) {
      return absl::FailedPreconditionError(
          absl::StrCat(base, path, ": HTTP ", r->status, ": ", ErrorMessage(*r)));
    }
  }
  return absl::OkStatus();
}

absl::Status OpenAiBackend::UsePolicy(const v1::PolicyVersion& v) {
  absl::MutexLock update(&update_mu_);
  if (!options_.lora_updates) return absl::OkStatus();
  if (!v.adapter()) {
    if (v.step() == 0) return absl::OkStatus();  // the base model the servers already serve
    return absl::FailedPreconditionError(
        "a full-weight policy version cannot be pushed to an OpenAI-compatible server; train with "
        "--lora, or restart the servers on " + v.checkpoint_uri());
  }
  const std::string name = absl::StrCat(options_.name, "-v", v.version());
  json load = {{"lora_name", name}, {"lora_path", v.checkpoint_uri()}};
  CRL_RETURN_IF_ERROR(PostAll("/load_lora_adapter", load.dump(), RequestContext::Background()));
  std::string stale;
  {
    absl::MutexLock lock(&mu_);
    target_ = {name, v.version()};
    loaded_adapters_.push_back(name);
    // Requests in flight may still use the previous adapter: unload the one
    // before it.
    if (loaded_adapters_.size() > 2) {
      stale = loaded_adapters_.front();
      loaded_adapters_.erase(loaded_adapters_.begin());
    }
  }
  if (!stale.empty()) {
    absl::Status s = PostAll("/unload_lora_adapter", json({{"lora_name", stale}}).dump(),
                             RequestContext::Background());
    if (!s.ok()) CRL_LOG(WARNING) << "crl-sampler: unloading " << stale << ": " << s;
  }
  CRL_LOG(INFO) << "crl-sampler: endpoints serve policy version " << v.version() << " as " << name;
  return absl::OkStatus();
}

}  // namespace crl::sampler
