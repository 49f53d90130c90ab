// The in-process LibTorch policy: the model directory's tokenizer and chat
// format, a continuous-batching GenerationEngine per policy version, and hot
// swaps. A new version (a full model directory, or a LoRA adapter over the
// base) is loaded beside the current one when the first request after its
// announcement needs it (a trainer publishing a version a step during SFT,
// which nothing samples, costs no loads; only the newest is loaded);
// requests that start afterwards use it, requests in flight finish on the
// engine they started on (each completion says which version it came from),
// and the old engine goes when its last request does. A version that fails
// to load is logged and counted, and the current one goes on serving.
#ifndef CRL_SERVICES_SAMPLER_LOCAL_BACKEND_H_
#define CRL_SERVICES_SAMPLER_LOCAL_BACKEND_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "lib/policy/engine.h"
#include "lib/policy/loader.h"
#include "lib/policy/tokenizer.h"
#include "services/sampler/sampler_backend.h"
#include "services/sampler/sampler_metrics.h"
#include "services/sampler/sampler_setup.h"

namespace crl::sampler {

struct LocalBackendOptions {
  // The starting policy: a Hugging Face directory with tokenizer.json (and
  // tokenizer_config.json for chat).
  std::string model_dir;
  // The name clients ask for (OpenAI "model"); empty: the directory's name.
  std::string name;
  std::string device = "auto";
  std::string dtype = "auto";
  policy::EngineOptions engine;
  // max_tokens when a request gives none.
  int default_max_tokens = 512;
  // The version label of model_dir itself.
  std::string initial_version = "0";
  // How long a request with min_policy_step waits for that policy.
  absl::Duration policy_wait = absl::Seconds(60);
};

// Thread-safe.
class LocalBackend final : public SamplerBackendInterface {
 public:
  // `metrics` may be null and must outlive the backend.
  static absl::StatusOr<std::unique_ptr<LocalBackend>> Create(const LocalBackendOptions& options,
                                                              SamplerMetrics* metrics);
  ~LocalBackend() override;

  absl::StatusOr<v1::SampleResponse> Sample(const v1::SampleRequest& request,
                                            const RequestContext& context) override;
  // Token by token: each piece is one token, with the text it completes (a
  // character split across tokens waits for its last byte; with stop
  // strings, the text that could start one waits until it cannot).
  absl::StatusOr<v1::SampleResponse> SampleStream(const v1::SampleRequest& request,
                                                  const RequestContext& context, const PieceSink& sink) override;
  std::vector<v1::Policy> Policies() const override;
  absl::Status UsePolicy(const v1::PolicyVersion& version) override;
  std::string TokenText(int id) const override;

  const std::string& name() const { return options_.name; }
  std::string version() const;
  const policy::Tokenizer& tokenizer() const { return *tokenizer_; }

 private:
  struct Instance {
    std::string version;
    // PolicyVersion.step (0 for model_dir itself); written under mu_.
    int64_t step = 0;
    bool adapter = false;
    std::shared_ptr<policy::GenerationEngine> engine;
  };
  class TextStream;
  LocalBackend(LocalBackendOptions options, SamplerMetrics* metrics);
  absl::StatusOr<std::shared_ptr<Instance>> Load(const std::string& model_dir, const std::string& adapter,
                                                 const std::string& version);
  // The policy a request starting now samples from: the announced version,
  // loaded here first if it is not yet.
  std::shared_ptr<Instance> Serving();
  // Until the announced policy's step is at least `step`, policy_wait passes
  // or `context` ends; then Serving().
  std::shared_ptr<Instance> AwaitStep(int64_t step, const RequestContext& context);

  LocalBackendOptions options_;
  SamplerMetrics* metrics_;
  // The policy's versions, read in Create and then under load_mu_; it keeps
  // the base a LoRA version's adapter attaches to.
  std::unique_ptr<policy::PolicyLoader> loader_;
  std::unique_ptr<policy::Tokenizer> tokenizer_;
  absl::StatusOr<policy::ChatFormat> chat_ = absl::NotFoundError("no chat format");
  std::vector<int> eos_ids_;
  mutable absl::Mutex mu_;
  std::shared_ptr<Instance> current_ ABSL_GUARDED_BY(mu_);
  // The newest announced version not yet loaded.
  std::optional<v1::PolicyVersion> pending_ ABSL_GUARDED_BY(mu_);
  absl::Mutex load_mu_;  // one load at a time
};

// The LocalBackendFactory of sampler_setup.h: a LocalBackend from the
// sampler's --policy, --policy_name, --device, --dtype, --max_batch,
// --max_len, --cuda_graphs and --default_max_tokens.
absl::StatusOr<std::unique_ptr<SamplerBackendInterface>> NewLocalBackend(const SamplerOptions& options,
                                                                         SamplerMetrics* metrics);

}  // namespace crl::sampler

#endif  // CRL_SERVICES_SAMPLER_LOCAL_BACKEND_H_
