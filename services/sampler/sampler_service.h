// crl-sampler's gRPC edge: SamplerService over a backend. Sampling runs on
// the request executor (it waits for the engine or an endpoint); listing
// policies runs inline.
#ifndef CRL_SERVICES_SAMPLER_SAMPLER_SERVICE_H_
#define CRL_SERVICES_SAMPLER_SAMPLER_SERVICE_H_

#include <string>

#include "common/server.h"
#include "crl/v1/sampler.grpc.pb.h"
#include "services/sampler/sampler_backend.h"
#include "services/sampler/sampler_metrics.h"

namespace crl {

// Thread-safe; holds no per-call state.
class SamplerServiceImpl final : public v1::SamplerService::CallbackService {
 public:
  // `backend` and `metrics` (may be null) must outlive the service.
  SamplerServiceImpl(sampler::SamplerBackendInterface* backend, std::string backend_kind,
                     sampler::SamplerMetrics* metrics, CallEnv env)
      : backend_(backend), kind_(std::move(backend_kind)), metrics_(metrics), env_(env) {}

  grpc::ServerUnaryReactor* Sample(grpc::CallbackServerContext* context, const v1::SampleRequest* request,
                                   v1::SampleResponse* response) override;
  grpc::ServerUnaryReactor* ListPolicies(grpc::CallbackServerContext* context,
                                         const v1::ListPoliciesRequest* request,
                                         v1::ListPoliciesResponse* response) override;

 private:
  sampler::SamplerBackendInterface* backend_;
  std::string kind_;
  sampler::SamplerMetrics* metrics_;
  CallEnv env_;
};

}  // namespace crl

#endif  // CRL_SERVICES_SAMPLER_SAMPLER_SERVICE_H_
