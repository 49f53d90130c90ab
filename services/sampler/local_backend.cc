#include "services/sampler/local_backend.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/status.h"
#include "common/utf8.h"

namespace crl::sampler {
namespace {

namespace fs = std::filesystem;

// The earliest occurrence of any stop string in `text` (npos if none).
size_t FirstStop(const std::string& text, const google::protobuf::RepeatedPtrField<std::string>& stops) {
  size_t at = std::string::npos;
  for (const std::string& s : stops) {
    if (s.empty()) continue;
    at = std::min(at, text.find(s));
  }
  return at;
}

// The end of the last whole UTF-8 character in text[0, end): a character
// whose bytes are not all there yet is left for a later piece.
size_t WholeCharacters(const std::string& text, size_t end) {
  size_t at = end;
  for (int back = 0; back < 4 && at > 0; ++back) {
    const unsigned char c = static_cast<unsigned char>(text[--at]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte
    const size_t need = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 1;
    return at + need <= end ? end : at;
  }
  return end;  // stray continuation bytes: replaced whatever follows
}

void AddTopLogprobs(const std::vector<policy::TopToken>& top, v1::Completion* c) {
  v1::TopLogprobs* t = c->add_top_logprobs();
  for (const policy::TopToken& k : top) {
    t->add_token_ids(k.token);
    t->add_logprobs(k.logprob);
  }
}

}  // namespace

// One completion's text as a stream: what a client has been sent so far,
// always a prefix of the text Sample returns.
class LocalBackend::TextStream {
 public:
  TextStream(const policy::Tokenizer* tokenizer, const v1::SamplingParams* params)
      : tokenizer_(tokenizer), params_(params) {
    for (const std::string& s : params->stop()) hold_ = std::max(hold_, s.empty() ? 0 : s.size() - 1);
  }

  // The piece of the token just generated.
  v1::Completion Next(const policy::Generation& so_far) {
    v1::Completion piece;
    piece.add_token_ids(so_far.tokens.back());
    piece.add_token_logprobs(so_far.logprobs.back());
    if (!so_far.top_logprobs.empty()) AddTopLogprobs(so_far.top_logprobs.back(), &piece);
    if (stopped_) return piece;
    std::string text = tokenizer_->Decode(so_far.tokens, /*skip_special=*/true);
    size_t end = text.size() - std::min(text.size(), hold_);
    if (params_->stop_size() > 0) {
      const size_t at = FirstStop(text, params_->stop());
      if (at != std::string::npos) {
        end = at;
        stopped_ = true;
      }
    }
    text.resize(WholeCharacters(text, end));
    piece.set_text(Extend(ValidUtf8(text)));
    return piece;
  }

  // The rest of the final text (and the finish reason).
  v1::Completion Last(const v1::Completion& done) {
    v1::Completion piece;
    piece.set_text(Extend(done.text()));
    piece.set_finish_reason(done.finish_reason());
    return piece;
  }

 private:
  // What `text` adds to what was sent ("" unless it extends it).
  std::string Extend(const std::string& text) {
    if (text.size() <= sent_.size() || text.compare(0, sent_.size(), sent_) != 0) return "";
    std::string more = text.substr(sent_.size());
    sent_ = text;
    return more;
  }

  const policy::Tokenizer* tokenizer_;
  const v1::SamplingParams* params_;
  size_t hold_ = 0;  // bytes that could be the start of a stop string
  bool stopped_ = false;
  std::string sent_;
};

LocalBackend::LocalBackend(LocalBackendOptions options, SamplerMetrics* metrics)
    : options_(std::move(options)), metrics_(metrics) {}

LocalBackend::~LocalBackend() = default;

absl::StatusOr<std::unique_ptr<LocalBackend>> LocalBackend::Create(const LocalBackendOptions& o,
                                                                   SamplerMetrics* metrics) {
  if (o.model_dir.empty()) return absl::InvalidArgumentError("policy: a model directory is required");
  std::unique_ptr<LocalBackend> b(new LocalBackend(o, metrics));
  if (b->options_.name.empty()) b->options_.name = fs::path(o.model_dir).filename().string();
  CRL_ASSIGN_OR_RETURN(auto placement, policy::ResolvePlacement(o.device, o.dtype));
  b->loader_ = std::make_unique<policy::PolicyLoader>(placement);
  CRL_ASSIGN_OR_RETURN(b->tokenizer_, policy::LoadTokenizer(o.model_dir));
  b->chat_ = policy::LoadChatFormat(o.model_dir);
  CRL_ASSIGN_OR_RETURN(auto first, b->Load(o.model_dir, "", o.initial_version));
  for (int id : first->engine->model().config().eos_token_ids) b->eos_ids_.push_back(id);
  absl::MutexLock lock(&b->mu_);
  b->current_ = std::move(first);
  return b;
}

absl::StatusOr<std::shared_ptr<LocalBackend::Instance>> LocalBackend::Load(const std::string& model_dir,
                                                                           const std::string& adapter,
                                                                           const std::string& version) {
  CRL_ASSIGN_OR_RETURN(auto model, loader_->Load(model_dir, adapter));
  if (tokenizer_->vocab_size() > model->config().vocab_size) {
    return absl::FailedPreconditionError(absl::StrCat(model_dir, ": vocab_size ", model->config().vocab_size,
                                                      " is smaller than the tokenizer's ",
                                                      tokenizer_->vocab_size()));
  }
  auto instance = std::make_shared<Instance>();
  instance->version = version;
  instance->adapter = !adapter.empty();
  CRL_ASSIGN_OR_RETURN(auto engine, policy::GenerationEngine::Start(std::move(model), options_.engine));
  instance->engine = std::move(engine);
  return instance;
}

std::shared_ptr<LocalBackend::Instance> LocalBackend::Serving() {
  std::optional<v1::PolicyVersion> next;
  {
    absl::MutexLock lock(&mu_);
    if (!pending_) return current_;
  }
  absl::MutexLock load(&load_mu_);  // one load at a time; requests behind it wait for it
  {
    absl::MutexLock lock(&mu_);
    if (!pending_) return current_;  // loaded while this request waited
    next = pending_;
  }
  std::string dir = next->checkpoint_uri(), adapter;
  if (next->adapter()) {
    adapter = dir;
    dir = next->base_model().empty() ? options_.model_dir : next->base_model();
  }
  auto instance = Load(dir, adapter, next->version());
  if (metrics_) metrics_->policy_updates.Add({{"result", instance.ok() ? "ok" : "failed"}}).Increment();
  absl::MutexLock lock(&mu_);
  if (pending_ && pending_->version() == next->version()) pending_.reset();  // else a newer one came meanwhile
  if (!instance.ok()) {
    CRL_LOG(ERROR) << "crl-sampler: policy version " << next->version() << " from " << next->checkpoint_uri()
                   << " did not load (still serving " << current_->version << "): " << instance.status();
    return current_;
  }
  (*instance)->step = next->step();
  current_ = std::move(*instance);  // the old engine lives on in its requests
  if (metrics_) metrics_->policy_version.Set(static_cast<double>(next->step()));
  CRL_LOG(INFO) << "crl-sampler: serving policy version " << next->version() << " from " << next->checkpoint_uri();
  return current_;
}

std::shared_ptr<LocalBackend::Instance> LocalBackend::AwaitStep(int64_t step, const RequestContext& context) {
  const absl::Time until = absl::Now() + options_.policy_wait;
  {
    absl::MutexLock lock(&mu_);
    auto caught_up = [this, step]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return current_->step >= step || (pending_ && pending_->step() >= step);
    };
    while (!caught_up() && context.Check().ok()) {
      const absl::Duration left = until - absl::Now();
      if (left <= absl::ZeroDuration()) break;
      mu_.AwaitWithTimeout(absl::Condition(&caught_up), std::min(left, absl::Milliseconds(100)));
    }
  }
  return Serving();
}

std::string LocalBackend::version() const {
  absl::MutexLock lock(&mu_);
  return pending_ ? pending_->version() : current_->version;
}

std::string LocalBackend::TokenText(int id) const { return tokenizer_->Decode({id}); }

std::vector<v1::Policy> LocalBackend::Policies() const {
  v1::Policy p;
  p.set_name(options_.name);
  p.set_kind("libtorch");
  p.set_base_model(options_.model_dir);
  absl::MutexLock lock(&mu_);
  // What a request that starts now samples from: the announced version.
  p.set_version(pending_ ? pending_->version() : current_->version);
  p.set_adapter(pending_ ? pending_->adapter() : current_->adapter);
  return {p};
}

absl::Status LocalBackend::UsePolicy(const v1::PolicyVersion& v) {
  absl::MutexLock lock(&mu_);
  if (current_->version == v.version()) {
    current_->step = std::max(current_->step, v.step());  // the version it serves, now with its step
    pending_.reset();  // an older announcement is superseded
    return absl::OkStatus();
  }
  pending_ = v;  // loaded by the first request that needs it (Serving)
  return absl::OkStatus();
}

absl::StatusOr<v1::SampleResponse> LocalBackend::Sample(const v1::SampleRequest& request,
                                                        const RequestContext& context) {
  return SampleStream(request, context, nullptr);
}

absl::StatusOr<v1::SampleResponse> LocalBackend::SampleStream(const v1::SampleRequest& request,
                                                              const RequestContext& context,
                                                              const PieceSink& sink) {
  if (!request.policy().empty() && request.policy() != options_.name) {
    return absl::NotFoundError(absl::StrCat("policy '", request.policy(), "' is not served here (",
                                            options_.name, " is)"));
  }
  std::shared_ptr<Instance> instance =
      request.min_policy_step() > 0 ? AwaitStep(request.min_policy_step(), context) : Serving();
  const v1::SamplingParams& p = request.params();
  policy::GenerationRequest g;
  std::vector<int> stop_ids(p.stop_token_ids().begin(), p.stop_token_ids().end());
  if (request.messages_size() > 0) {
    if (!chat_.ok()) return absl::FailedPreconditionError(absl::StrCat("chat messages: ", chat_.status().message()));
    std::vector<policy::ChatMessage> messages;
    for (const auto& m : request.messages()) messages.push_back({m.role(), m.content()});
    CRL_ASSIGN_OR_RETURN(g.prompt, policy::EncodeChat(*tokenizer_, *chat_, messages, true));
    for (int id : policy::EndOfTurnIds(*tokenizer_, *chat_)) stop_ids.push_back(id);
  } else {
    g.prompt = tokenizer_->Encode(request.prompt());
  }
  for (int id : eos_ids_) stop_ids.push_back(id);
  if (g.prompt.empty()) return absl::InvalidArgumentError("prompt: empty");
  g.n = std::max(1, request.num_completions());
  g.top_logprobs = p.top_logprobs();
  g.params.temperature = p.temperature();
  g.params.top_p = p.top_p() > 0 && p.top_p() <= 1 ? p.top_p() : 1.0;
  g.params.top_k = std::max(0, p.top_k());
  g.params.max_new_tokens = p.max_tokens() > 0 ? p.max_tokens() : options_.default_max_tokens;
  g.params.seed = p.has_seed() ? p.seed() : std::random_device{}();
  g.params.stop_ids = stop_ids;
  if (p.stop_size() > 0) {
    // Stop strings: look at the decoded tail after each token.
    const policy::Tokenizer* tok = tokenizer_.get();
    g.stop = [tok, stops = p.stop()](const std::vector<int>& tokens) {
      const size_t from = tokens.size() > 16 ? tokens.size() - 16 : 0;
      const std::string tail = tok->Decode(std::vector<int>(tokens.begin() + from, tokens.end()));
      return FirstStop(tail, stops) != std::string::npos;
    };
  }
  std::vector<TextStream> streams;
  if (sink) {
    streams.assign(g.n, TextStream(tokenizer_.get(), &p));
    g.on_token = [&streams, &sink](int sample, const policy::Generation& so_far) {
      sink(sample, streams[sample].Next(so_far));
    };
  }
  if (metrics_) metrics_->queue_depth.Set(instance->engine->waiting());
  auto out = instance->engine->Generate(g, context);
  if (metrics_) metrics_->active_sequences.Set(instance->engine->active());
  if (!out.ok()) return out.status();
  v1::SampleResponse r;
  r.set_policy(options_.name);
  r.set_policy_version(instance->version);
  for (int id : g.prompt) r.add_prompt_token_ids(id);
  r.set_prompt_tokens(static_cast<int>(g.prompt.size()));
  double first = 1e300, total = 0;
  int tokens = 0;
  for (const policy::Generation& gen : *out) {
    v1::Completion* c = r.add_completions();
    std::string text = tokenizer_->Decode(gen.tokens, /*skip_special=*/true);
    std::string finish = gen.finish_reason;
    if (p.stop_size() > 0) {
      const size_t at = FirstStop(text, p.stop());
      if (at != std::string::npos) {
        text.resize(at);  // OpenAI semantics: the stop string is not returned
        finish = "stop";
      }
    }
    c->set_text(ValidUtf8(text));
    for (int t : gen.tokens) c->add_token_ids(t);
    for (float lp : gen.logprobs) c->add_token_logprobs(lp);
    for (const auto& top : gen.top_logprobs) AddTopLogprobs(top, c);
    c->set_finish_reason(finish);
    c->set_policy_version(instance->version);
    c->set_token_source("engine");
    first = std::min(first, gen.first_token_seconds);
    total = std::max(total, gen.seconds);
    tokens += static_cast<int>(gen.tokens.size());
  }
  for (size_t i = 0; i < streams.size(); ++i) sink(static_cast<int>(i), streams[i].Last(r.completions(i)));
  r.set_completion_tokens(tokens);
  r.mutable_timings()->set_first_token_seconds(first);
  r.mutable_timings()->set_total_seconds(total);
  r.set_attempts(1);
  return r;
}

absl::StatusOr<std::unique_ptr<SamplerBackendInterface>> NewLocalBackend(const SamplerOptions& o,
                                                                         SamplerMetrics* metrics) {
  LocalBackendOptions l;
  l.model_dir = o.policy;
  l.name = o.policy_name;
  l.device = o.device;
  l.dtype = o.dtype;
  l.engine.max_batch = o.max_batch;
  l.engine.max_len = o.max_len;
  l.engine.cuda_graphs = o.cuda_graphs;
  l.default_max_tokens = o.default_max_tokens;
  l.policy_wait = absl::Seconds(o.policy_wait_seconds);
  CRL_ASSIGN_OR_RETURN(auto backend, LocalBackend::Create(l, metrics));
  return std::unique_ptr<SamplerBackendInterface>(std::move(backend));
}

}  // namespace crl::sampler

namespace crl {

absl::StatusOr<std::unique_ptr<SamplerClientInterface>> StartLocalPolicySampler(
    const LocalSamplerOptions& options) {
  return sampler::StartInProcess(options, &sampler::NewLocalBackend);
}

}  // namespace crl
