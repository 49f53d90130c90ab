// Completions from OpenAI-compatible servers (vLLM, SGLang, TGI, llama.cpp's
// server, Ollama, hosted APIs), kept trainable and kept honest:
//  - several endpoints, each with bounded concurrency, load-balanced by
//    fewest requests in flight; a request waits for a free connection;
//  - retries with exponential back-off and full jitter on connect errors,
//    resets, timeouts, 429 (its Retry-After honoured), 5xx and malformed
//    bodies, moving to another endpoint; after the retry budget the answer
//    is UNAVAILABLE naming the endpoints and the last error, never an empty
//    completion counted as a sample; other 4xx are not retried;
//  - token ids from the server when it returns them (vLLM's
//    return_tokens_as_token_ids), else from the model's tokenizer when one is
//    configured (then the server's per-token logprobs are kept only when the
//    tokenizations agree in length);
//  - the API key from a file or an environment variable, never logged;
//  - streamed responses (server-sent events) when asked;
//  - trainer LoRA versions registered with vLLM's runtime LoRA endpoint
//    (POST /v1/load_lora_adapter) and used by name; the previous-but-one is
//    unloaded.
#ifndef CRL_SERVICES_SAMPLER_OPENAI_BACKEND_H_
#define CRL_SERVICES_SAMPLER_OPENAI_BACKEND_H_

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "lib/policy/tokenizer.h"
#include "common/http_client.h"
#include "services/sampler/openai_format.h"
#include "services/sampler/sampler_backend.h"
#include "services/sampler/sampler_metrics.h"

namespace crl::sampler {

struct OpenAiBackendOptions {
  // Base URLs, e.g. http://vllm-0:8000/v1 (requests go to <base>/chat/completions).
  std::vector<std::string> endpoints;
  // The served model to ask for.
  std::string model;
  // The policy name clients use (default: model).
  std::string name;
  // "chat" (/chat/completions) or "completions".
  std::string api = "chat";
  bool stream = false;
  // Send vLLM / SGLang parameters (top_k, stop_token_ids,
  // return_tokens_as_token_ids); off for strict servers.
  bool extensions = true;
  // The API key: a file holding it, else this environment variable.
  std::string api_key_file;
  std::string api_key_env = "OPENAI_API_KEY";
  int max_concurrency_per_endpoint = 16;
  // Attempts per request (the first included), back-off between them.
  int max_attempts = 6;
  absl::Duration initial_backoff = absl::Milliseconds(500);
  absl::Duration max_backoff = absl::Seconds(30);
  absl::Duration connect_timeout = absl::Seconds(5);
  absl::Duration request_timeout = absl::Seconds(300);
  size_t max_response_bytes = 64 << 20;
  int default_max_tokens = 512;
  // A model directory or tokenizer.json for token ids when the server
  // returns none (optional).
  std::string tokenizer;
  // Register the trainer's LoRA versions with the servers.
  bool lora_updates = true;
};

// Thread-safe.
class OpenAiBackend final : public SamplerBackendInterface {
 public:
  // `http`, `clock` and `metrics` (may be null) must outlive the backend.
  static absl::StatusOr<std::unique_ptr<OpenAiBackend>> Create(const OpenAiBackendOptions& options,
                                                               HttpClientInterface* http,
                                                               ClockInterface* clock,
                                                               SamplerMetrics* metrics,
                                                               uint64_t seed = std::random_device{}());

  absl::StatusOr<v1::SampleResponse> Sample(const v1::SampleRequest& request,
                                            const RequestContext& context) override;
  std::vector<v1::Policy> Policies() const override;
  absl::Status UsePolicy(const v1::PolicyVersion& version) override;
  std::string TokenText(int id) const override;

 private:
  struct Endpoint {
    std::string base;
    int in_flight = 0;
  };
  struct Target {
    std::string model;    // what requests ask for (the base model or an adapter)
    std::string version;  // the policy version it serves
  };
  OpenAiBackend(OpenAiBackendOptions options, HttpClientInterface* http, ClockInterface* clock,
                SamplerMetrics* metrics, uint64_t seed);
  // A free endpoint (fewest in flight, not `avoid` when another is free);
  // waits for one. -1 with the context's status when it ends first.
  int Acquire(int avoid, const RequestContext& context, absl::Status* status);
  void Release(int index);
  absl::Duration Backoff(int attempt, absl::Duration retry_after);
  absl::StatusOr<ApiResult> Attempt(int endpoint, const std::string& body, const RequestContext& context,
                                    absl::Status* retryable, std::string* cause,
                                    absl::Duration* retry_after);
  absl::Status PostAll(const std::string& path, const std::string& body, const RequestContext& context);
  std::map<std::string, std::string> Headers() const;

  OpenAiBackendOptions options_;
  HttpClientInterface* http_;
  ClockInterface* clock_;
  SamplerMetrics* metrics_;
  ApiKind kind_;
  std::string api_key_;  // never logged
  std::unique_ptr<policy::Tokenizer> tokenizer_;
  mutable absl::Mutex mu_;
  std::vector<Endpoint> endpoints_ ABSL_GUARDED_BY(mu_);
  int waiting_ ABSL_GUARDED_BY(mu_) = 0;
  std::mt19937_64 rng_ ABSL_GUARDED_BY(mu_);
  Target target_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> loaded_adapters_ ABSL_GUARDED_BY(mu_);
  absl::Mutex update_mu_;  // one policy update at a time
};

// Seconds or an HTTP date; zero when absent or unreadable.
absl::Duration ParseRetryAfter(const std::string& value, absl::Time now);

}  // namespace crl::sampler

#endif  // CRL_SERVICES_SAMPLER_OPENAI_BACKEND_H_
