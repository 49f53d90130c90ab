// crl-sampler's parts from one options struct: the backend (the in-process
// policy with --policy, or OpenAI-compatible endpoints with --endpoints),
// the optional OpenAI HTTP server (--openai_listen), and a follower of the
// trainer's published versions (--trainer). Shared by crl-sampler's main(),
// StartLocalSampler and the CLI.
#ifndef CRL_SERVICES_SAMPLER_SAMPLER_SETUP_H_
#define CRL_SERVICES_SAMPLER_SAMPLER_SETUP_H_

#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "common/client.h"
#include "common/clock.h"
#include "common/options.h"
#include "common/http_client.h"
#include "services/sampler/openai_backend.h"
#include "services/sampler/openai_server.h"
#include "services/sampler/sampler_backend.h"
#include "services/sampler/sampler_client.h"
#include "services/sampler/sampler_metrics.h"
#include "services/trainer/trainer_client.h"

namespace crl::sampler {

struct SamplerOptions {
  // The in-process policy: a Hugging Face model directory (LibTorch builds).
  std::string policy;
  std::string policy_name;
  std::string device = "auto";
  std::string dtype = "auto";
  int max_batch = 64;
  int max_len = 0;  // the model's context, at most policy::kDefaultMaxLen
  bool cuda_graphs = true;
  int default_max_tokens = 512;
  // How long a request's min_policy_step waits for the trainer's version.
  double policy_wait_seconds = 60;
  // Or OpenAI-compatible endpoints.
  OpenAiBackendOptions openai;
  // Serve the OpenAI HTTP API too (empty: no).
  OpenAiServerOptions server;
  bool serve_openai = false;
  // Follow crl-trainer's published versions (HOST:PORT; empty: no).
  std::string trainer;
  ClientOptions trainer_client;
};

// Binds --policy, --policy_name, --device, --dtype, --max_batch, --max_len, --cuda_graphs,
// --default_max_tokens, --endpoints, --endpoint_model, --endpoint_api, ...,
// --openai_listen, --openai_auth_token_file, --trainer (and its --trainer_*
// client options).
void BindSamplerOptions(OptionSet* set, SamplerOptions* options);

struct SamplerParts {
  std::unique_ptr<HttpClientInterface> http;
  std::unique_ptr<SamplerBackendInterface> backend;
  std::string backend_kind;  // "libtorch" or "openai-http"
  std::unique_ptr<OpenAiServer> server;
  std::unique_ptr<TrainerClientInterface> trainer;

  ~SamplerParts();
  // Takes up each version the trainer publishes (reconnecting when the
  // trainer restarts) until Stop().
  void FollowTrainer();
  void Stop();

 private:
  RequestContext follow_;
  std::thread follower_;
};

// Builds the in-process policy backend. It lives in crl_sampler_local
// (services/sampler/local_backend.h: NewLocalBackend), the one sampler part
// that links LibTorch, so that binaries which only talk to endpoints or
// other services stay free of it; those pass null.
using LocalBackendFactory = absl::StatusOr<std::unique_ptr<SamplerBackendInterface>> (*)(
    const SamplerOptions& options, SamplerMetrics* metrics);

// Validates the options (one backend: --policy or --endpoints) and builds
// the parts; --policy needs `local` (UNIMPLEMENTED when null). `metrics`
// (may be null) and `clock` must outlive them.
absl::StatusOr<std::unique_ptr<SamplerParts>> BuildSampler(const SamplerOptions& options,
                                                           SamplerMetrics* metrics, ClockInterface* clock,
                                                           LocalBackendFactory local);

// A sampler inside this process behind the client interface (no gRPC);
// StartLocalSampler and StartLocalPolicySampler (sampler_client.h) are it.
absl::StatusOr<std::unique_ptr<SamplerClientInterface>> StartInProcess(const LocalSamplerOptions& options,
                                                                       LocalBackendFactory local);

}  // namespace crl::sampler

#endif  // CRL_SERVICES_SAMPLER_SAMPLER_SETUP_H_
