// crl-sampler: completions from the in-process LibTorch policy (--policy
// DIR) or OpenAI-compatible endpoints (--endpoints URL,...), over gRPC
// (SamplerService) and, for the in-process policy, the OpenAI HTTP API
// (--serve_openai --openai_listen HOST:PORT). With --trainer it takes up
// each policy version crl-trainer publishes.
#include <cstdio>
#include <memory>

#include "common/memory.h"
#include "common/service_main.h"
#include "common/status.h"
#include "services/sampler/sampler_metrics.h"
#include "services/sampler/sampler_service.h"
#include "services/sampler/sampler_setup.h"
#ifdef CRL_WITH_TORCH
#include "services/sampler/local_backend.h"
constexpr crl::sampler::LocalBackendFactory kLocal = &crl::sampler::NewLocalBackend;
#else
constexpr crl::sampler::LocalBackendFactory kLocal = nullptr;
#endif

int main(int argc, char** argv) {
  crl::RetainFreedHeap();
  crl::ServiceMain service_main({"crl-sampler", "crl.v1.SamplerService",
                                 "Completions from an in-process policy or OpenAI-compatible endpoints.",
                                 "127.0.0.1:50054", {"sampler", 64, 1024}});
  crl::sampler::SamplerOptions options;
  crl::sampler::BindSamplerOptions(service_main.flags(), &options);
  std::unique_ptr<crl::sampler::SamplerMetrics> metrics;
  std::unique_ptr<crl::sampler::SamplerParts> parts;
  std::unique_ptr<crl::SamplerServiceImpl> service;
  return service_main.Run(argc, argv, [&](crl::ServiceSetup& setup) -> absl::Status {
    metrics = std::make_unique<crl::sampler::SamplerMetrics>(setup.registry());
    CRL_ASSIGN_OR_RETURN(parts, crl::sampler::BuildSampler(options, metrics.get(), crl::RealClock::Get(), kLocal));
    service = std::make_unique<crl::SamplerServiceImpl>(parts->backend.get(), parts->backend_kind,
                                                        metrics.get(), setup.call_env());
    setup.AddService(service.get());
    if (parts->server) {
      std::printf("crl-sampler openai listening http=127.0.0.1:%d\n", parts->server->port());
      std::fflush(stdout);
    }
    parts->FollowTrainer();
    setup.SetDrain([&] { parts->Stop(); });
    return absl::OkStatus();
  });
}
