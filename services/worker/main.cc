// crl-worker: sandboxed compile-and-verify pool, one per GPU node.
#include <memory>

#include "common/service_main.h"
#include "services/worker/eval_service.h"
#include "services/worker/worker_setup.h"

int main(int argc, char** argv) {
  crl::ServiceMain service_main({"crl-worker", "crl.v1.EvalService",
                                 "Sandboxed compile, verify and measure (EvalService).",
                                 "127.0.0.1:50051", {"eval", 8, 64}});
  crl::WorkerOptions options;
  crl::BindWorkerOptions(service_main.flags(), &options);
  std::unique_ptr<crl::WorkerRuntime> worker;
  std::unique_ptr<crl::EvalServiceImpl> service;
  return service_main.Run(argc, argv, [&](crl::ServiceSetup& setup) -> absl::Status {
    // Secrets must never be readable by candidates (or echoed by compilers).
    for (const std::string& secret :
         {setup.server_options().auth_token_file, setup.server_options().tls_key_file}) {
      if (!secret.empty()) options.runner.hidden_paths.push_back(secret);
    }
    auto built = crl::BuildWorker(options, setup.registry());
    if (!built.ok()) return built.status();
    worker = std::move(*built);
    service = std::make_unique<crl::EvalServiceImpl>(worker->engine.get(), setup.call_env(),
                                                     worker->metrics.get());
    setup.AddService(service.get());
    // Ready only after a self-test: the shipped row_sum task's reference,
    // compiled and verified on this worker's first lane kind, must pass.
    setup.SetWarmUp([&]() -> absl::Status { return crl::SelfTest(worker->engine.get(), options); });
    return absl::OkStatus();
  });
}
