// Where completions come from, behind one interface: the in-process LibTorch
// policy (local_backend.h) or OpenAI-compatible endpoints
// (openai_backend.h). The gRPC edge, the OpenAI HTTP server and the CLI all
// talk to a backend through this.
#ifndef CRL_SERVICES_SAMPLER_SAMPLER_BACKEND_H_
#define CRL_SERVICES_SAMPLER_SAMPLER_BACKEND_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/context.h"
#include "crl/v1/sampler.pb.h"
#include "crl/v1/trainer.pb.h"

namespace crl::sampler {

// A piece of completion `index` as it is generated: the text, token ids,
// log-probabilities (and top tokens) new since its previous piece; its last
// piece carries the finish_reason. Pieces of one request arrive one at a
// time, in order, from a thread of the backend's: the sink must be cheap.
using PieceSink = std::function<void(int index, const v1::Completion& piece)>;

// Implementations are thread-safe.
class SamplerBackendInterface {
 public:
  virtual ~SamplerBackendInterface() = default;
  // n completions. INVALID_ARGUMENT for a bad request; UNAVAILABLE when the
  // policy cannot answer (an endpoint down after its retry budget) — never
  // an empty completion in place of one.
  virtual absl::StatusOr<v1::SampleResponse> Sample(const v1::SampleRequest& request,
                                                    const RequestContext& context) = 0;
  // Sample, also handing each completion to `sink` piece by piece while it
  // is generated (the pieces of a completion add up to its text and tokens).
  // This default sends each completion as one piece once all are done; the
  // in-process policy streams token by token.
  virtual absl::StatusOr<v1::SampleResponse> SampleStream(const v1::SampleRequest& request,
                                                          const RequestContext& context, const PieceSink& sink) {
    auto r = Sample(request, context);
    if (r.ok()) {
      for (int i = 0; i < r->completions_size(); ++i) sink(i, r->completions(i));
    }
    return r;
  }
  virtual std::vector<v1::Policy> Policies() const = 0;
  // A new version from the trainer: requests that start afterwards use it;
  // requests in flight finish on theirs.
  virtual absl::Status UsePolicy(const v1::PolicyVersion& version) = 0;
  // A token id's bytes as decoded (possibly part of a UTF-8 character), for
  // logprobs in API responses ("" when unknown).
  virtual std::string TokenText(int id) const { (void)id; return ""; }
};

}  // namespace crl::sampler

#endif  // CRL_SERVICES_SAMPLER_SAMPLER_BACKEND_H_
