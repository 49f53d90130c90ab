#include "services/sampler/sampler_setup.h"

#include "absl/strings/str_cat.h"
#include "common/backoff.h"
#include "common/logging.h"
#include "common/status.h"
#include "services/trainer/grpc_trainer_client.h"

namespace crl::sampler {

void BindSamplerOptions(OptionSet* set, SamplerOptions* o) {
  set->Add("policy", &o->policy, "the in-process policy: a Hugging Face model directory");
  set->Add("policy_name", &o->policy_name, "the name clients ask for (default: the directory's name)");
  set->Add("device", &o->device, "in-process: auto, cpu, cuda or cuda:N");
  set->Add("dtype", &o->dtype, "in-process: auto (bfloat16 on CUDA, float32 on CPU), float32, bfloat16");
  set->Add("max_batch", &o->max_batch, "in-process: sequences decoded together (KV cache slots)");
  set->Add("max_len", &o->max_len, "in-process: positions per sequence, prompt included (0: the model's context, at most 4096; "
           "the KV cache holds max_batch x max_len positions)");
  set->Add("cuda_graphs", &o->cuda_graphs, "in-process on CUDA: replay decode steps from CUDA graphs");
  set->Add("default_max_tokens", &o->default_max_tokens, "max_tokens when a request gives none");
  set->Add("policy_wait_seconds", &o->policy_wait_seconds,
           "in-process: how long a request's min_policy_step waits for the trainer's version");
  OpenAiBackendOptions& a = o->openai;
  set->Add("endpoints", &a.endpoints, "OpenAI-compatible base URLs (http://host:8000/v1, ...)");
  set->Add("endpoint_model", &a.model, "the model the endpoints serve");
  set->Add("endpoint_api", &a.api, "chat or completions");
  set->Add("endpoint_stream", &a.stream, "ask the endpoints for streamed responses");
  set->Add("endpoint_extensions", &a.extensions,
           "send vLLM/SGLang parameters (top_k, stop_token_ids, return_tokens_as_token_ids)");
  set->Add("endpoint_api_key_file", &a.api_key_file, "a file holding the endpoints' API key");
  set->Add("endpoint_api_key_env", &a.api_key_env, "else this environment variable holds it");
  set->Add("endpoint_concurrency", &a.max_concurrency_per_endpoint, "requests in flight per endpoint");
  set->Add("endpoint_attempts", &a.max_attempts, "attempts per request, retries included");
  set->Add("endpoint_initial_backoff", &a.initial_backoff, "first retry back-off (doubles, full jitter)");
  set->Add("endpoint_max_backoff", &a.max_backoff, "longest retry back-off");
  set->Add("endpoint_timeout", &a.request_timeout, "one attempt's time limit");
  set->Add("endpoint_max_response_bytes", &a.max_response_bytes, "largest response body accepted");
  set->Add("endpoint_tokenizer", &a.tokenizer,
           "a model directory or tokenizer.json for token ids the endpoints do not return");
  set->Add("endpoint_lora_updates", &a.lora_updates, "register the trainer's LoRA versions with the endpoints");
  set->Add("openai_listen", &o->server.listen, "serve the OpenAI HTTP API here (with --serve_openai)");
  set->Add("serve_openai", &o->serve_openai, "serve the OpenAI HTTP API for the in-process policy");
  set->Add("openai_auth_token_file", &o->server.auth_token_file,
           "bearer token the OpenAI API requires (empty: none)");
  set->Add("openai_threads", &o->server.threads, "OpenAI API request threads");
  set->Add("trainer", &o->trainer, "follow this crl-trainer's published versions (HOST:PORT)");
  BindClientOptions(set, &o->trainer_client, "trainer", "--trainer");
}

SamplerParts::~SamplerParts() { Stop(); }

void SamplerParts::Stop() {
  follow_.Cancel();
  if (follower_.joinable()) follower_.join();
  if (server) server->Stop();
}

void SamplerParts::FollowTrainer() {
  if (!trainer) return;
  follower_ = std::thread([this] {
    Backoff backoff(absl::Milliseconds(200), absl::Seconds(10));
    while (!follow_.IsCancelled()) {
      absl::Status s = trainer->WatchPolicyVersions(follow_, [this](const v1::PolicyVersion& v) {
        if (v.checkpoint_uri().empty()) return;
        if (absl::Status u = backend->UsePolicy(v); !u.ok()) {
          CRL_LOG(ERROR) << "crl-sampler: policy version " << v.version() << ": " << u;
        }
      });
      if (follow_.IsCancelled()) return;
      CRL_LOG(WARNING) << "crl-sampler: the trainer's version stream ended (" << s << "); reconnecting";
      for (absl::Duration left = backoff.Next(); left > absl::ZeroDuration() && !follow_.IsCancelled();) {
        absl::SleepFor(absl::Milliseconds(100));
        left -= absl::Milliseconds(100);
      }
    }
  });
}

absl::StatusOr<std::unique_ptr<SamplerParts>> BuildSampler(const SamplerOptions& o, SamplerMetrics* metrics,
                                                           ClockInterface* clock, LocalBackendFactory local) {
  if (o.policy.empty() == o.openai.endpoints.empty()) {
    return absl::InvalidArgumentError(
        "policy / endpoints: give exactly one backend (--policy DIR or --endpoints URL,...)");
  }
  auto parts = std::make_unique<SamplerParts>();
  if (!o.policy.empty()) {
    if (local == nullptr) {
      return absl::UnimplementedError(
          "policy: this program has no in-process policy (crl-sampler and crl-policy built with LibTorch do); "
          "use --endpoints");
    }
    CRL_ASSIGN_OR_RETURN(parts->backend, local(o, metrics));
    parts->backend_kind = "libtorch";
  } else {
    OpenAiBackendOptions a = o.openai;
    a.default_max_tokens = o.default_max_tokens;
    if (a.name.empty()) a.name = o.policy_name;
    parts->http = NewCurlHttpClient();
    CRL_ASSIGN_OR_RETURN(auto backend, OpenAiBackend::Create(a, parts->http.get(), clock, metrics));
    parts->backend = std::move(backend);
    parts->backend_kind = "openai-http";
  }
  if (o.serve_openai) {
    CRL_ASSIGN_OR_RETURN(parts->server, OpenAiServer::Start(o.server, parts->backend.get(), metrics));
  }
  if (!o.trainer.empty()) {
    CRL_ASSIGN_OR_RETURN(auto t, GrpcTrainerClient::Create(o.trainer, o.trainer_client));
    parts->trainer = std::move(t);
  }
  return parts;
}

namespace {

class LocalSamplerClient final : public SamplerClientInterface {
 public:
  explicit LocalSamplerClient(std::unique_ptr<SamplerParts> parts) : parts_(std::move(parts)) {}
  absl::StatusOr<v1::SampleResponse> Sample(const v1::SampleRequest& request,
                                            const RequestContext& context) override {
    return parts_->backend->Sample(request, context);
  }
  absl::StatusOr<v1::ListPoliciesResponse> ListPolicies(const RequestContext&) override {
    v1::ListPoliciesResponse r;
    for (const auto& p : parts_->backend->Policies()) *r.add_policies() = p;
    return r;
  }

 private:
  std::unique_ptr<SamplerParts> parts_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<SamplerClientInterface>> StartInProcess(const LocalSamplerOptions& l,
                                                                       LocalBackendFactory local) {
  SamplerOptions options;
  options.policy = l.policy;
  options.openai.endpoints = l.endpoints;
  options.openai.model = l.model;
  CRL_ASSIGN_OR_RETURN(auto parts, BuildSampler(options, nullptr, RealClock::Get(), local));
  parts->FollowTrainer();
  return std::unique_ptr<SamplerClientInterface>(new LocalSamplerClient(std::move(parts)));
}

}  // namespace crl::sampler

namespace crl {

absl::StatusOr<std::unique_ptr<SamplerClientInterface>> StartLocalSampler(const LocalSamplerOptions& options) {
  return sampler::StartInProcess(options, nullptr);
}

}  // namespace crl
