// crl-sampler speaking the OpenAI HTTP API for its backend (the in-process
// policy), so existing tools and evaluation scripts — the official `openai`
// clients first — can talk to a crl policy: GET /v1/models, POST
// /v1/chat/completions and /v1/completions with n, logprobs, stop, seed and
// stream. Errors are OpenAI's error objects with matching HTTP statuses
// (400 invalid request, 401, 404 unknown model, 429 busy, 503 unavailable).
#ifndef CRL_SERVICES_SAMPLER_OPENAI_SERVER_H_
#define CRL_SERVICES_SAMPLER_OPENAI_SERVER_H_

#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "services/sampler/sampler_backend.h"
#include "services/sampler/sampler_metrics.h"

namespace httplib {
class Server;
}

namespace crl::sampler {

struct OpenAiServerOptions {
  // HOST:PORT; port 0 picks a free one.
  std::string listen = "127.0.0.1:0";
  // A file holding the bearer token clients must send; empty: none.
  std::string auth_token_file;
  int threads = 8;
  size_t max_body_bytes = 16 << 20;
  // How long a request may take.
  absl::Duration request_timeout = absl::Minutes(10);
};

class OpenAiServer {
 public:
  // Binds and starts serving on its own threads. `backend` and `metrics`
  // (may be null) must outlive the server.
  static absl::StatusOr<std::unique_ptr<OpenAiServer>> Start(const OpenAiServerOptions& options,
                                                             SamplerBackendInterface* backend,
                                                             SamplerMetrics* metrics);
  ~OpenAiServer();  // Stop()
  int port() const { return port_; }
  void Stop();

 private:
  OpenAiServer() = default;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace crl::sampler

#endif  // CRL_SERVICES_SAMPLER_OPENAI_SERVER_H_
