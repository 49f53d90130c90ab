// The one way other services and the CLI reach crl-sampler (SamplerService): an
// interface (free of gRPC: code that only uses a client compiles without it),
// its gRPC implementation in grpc_sampler_client.h, and a sampler inside the
// caller's process (StartLocalSampler, StartLocalPolicySampler). The fake for
// tests is fake_sampler_client.h.
#ifndef CRL_SERVICES_SAMPLER_SAMPLER_CLIENT_H_
#define CRL_SERVICES_SAMPLER_SAMPLER_CLIENT_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/context.h"
#include "crl/v1/sampler.pb.h"

namespace crl {

// Implementations are thread-safe.
class SamplerClientInterface {
 public:
  virtual ~SamplerClientInterface() = default;
  virtual absl::StatusOr<v1::SampleResponse> Sample(const v1::SampleRequest& request,
                                                    const RequestContext& context) = 0;
  virtual absl::StatusOr<v1::ListPoliciesResponse> ListPolicies(const RequestContext& context) = 0;
};

// A sampler in this process, no gRPC: one backend, as crl-sampler's flags.
struct LocalSamplerOptions {
  std::string policy;                  // a policy directory (StartLocalPolicySampler only)
  std::vector<std::string> endpoints;  // or OpenAI-compatible base URLs
  std::string model;                   // the model the endpoints serve
};

// Endpoints only; in crl_sampler_lib, which has no LibTorch (a policy
// directory is UNIMPLEMENTED here).
absl::StatusOr<std::unique_ptr<SamplerClientInterface>> StartLocalSampler(const LocalSamplerOptions& options);
// Endpoints or the in-process policy; in crl_sampler_local (LibTorch builds).
absl::StatusOr<std::unique_ptr<SamplerClientInterface>> StartLocalPolicySampler(
    const LocalSamplerOptions& options);

}  // namespace crl

#endif  // CRL_SERVICES_SAMPLER_SAMPLER_CLIENT_H_
