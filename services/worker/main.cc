// crl-worker: sandboxed compile-and-verify pool, one per GPU node.
#include <cstdio>
#include <string>

#include "common/logging.h"
#include "common/server.h"
#include "services/worker/eval_service.h"
#include "services/worker/worker_setup.h"

int main(int argc, char** argv) {
  crl::BlockTerminationSignals();
  crl::ServerOptions server_options;
  server_options.listen = "127.0.0.1:50051";
  crl::WorkerOptions worker_options;
  crl::ExecutorOptions executor_options{"eval", 8, 64};
  crl::OptionSet flags("crl-worker", "Sandboxed compile, verify and measure (EvalService).");
  crl::BindServerOptions(&flags, &server_options);
  crl::BindWorkerOptions(&flags, &worker_options);
  flags.Add("threads", &executor_options.threads,
            "request threads (compiles and lanes bound the real concurrency)");
  flags.Add("max_queue", &executor_options.max_queue,
            "requests that may wait before RESOURCE_EXHAUSTED");
  if (int exit_code = flags.ParseForMain(argc, argv); exit_code >= 0) return exit_code;
  // The token file must never be readable by candidates.
  if (!server_options.auth_token_file.empty()) {
    worker_options.engine.runner.hidden_paths.push_back(server_options.auth_token_file);
  }
  if (!server_options.tls_key_file.empty()) {
    worker_options.engine.runner.hidden_paths.push_back(server_options.tls_key_file);
  }

  crl::ServiceHost host("crl-worker", "crl.v1.EvalService", server_options);
  if (absl::Status s = host.Init(); !s.ok()) {
    CRL_LOG(ERROR) << s;
    return 1;
  }
  auto worker = crl::BuildWorker(worker_options, host.registry().get());
  if (!worker.ok()) {
    CRL_LOG(ERROR) << worker.status();
    return 1;
  }
  crl::BoundedExecutor executor(executor_options);
  crl::EvalServiceImpl service((*worker)->engine.get(), host.call_env(&executor),
                               (*worker)->metrics.get());
  host.AddService(&service);
  host.AddExecutor(&executor);
  if (absl::Status s = host.Start(); !s.ok()) {
    CRL_LOG(ERROR) << s;
    return 1;
  }
  host.SetReady(true);
  return host.RunUntilSignal();
}
