#include "common/service_main.h"

#include "common/logging.h"

namespace crl {

ServiceMain::ServiceMain(ServiceDefinition definition)
    : definition_(std::move(definition)),
      executor_options_(definition_.executor),
      flags_(definition_.component, definition_.summary) {
  BlockTerminationSignals();
  server_options_.listen = definition_.default_listen;
  BindServerOptions(&flags_, &server_options_);
  flags_.Add("threads", &executor_options_.threads,
             "request threads (heavy work is bounded further by the service's own pools)");
  flags_.Add("max_queue", &executor_options_.max_queue,
             "requests that may wait for a thread before RESOURCE_EXHAUSTED");
}

int ServiceMain::Parse(int argc, char** argv) {
  parsed_ = true;
  return flags_.ParseForMain(argc, argv);
}

int ServiceMain::Run(int argc, char** argv,
                     const std::function<absl::Status(ServiceSetup&)>& build) {
  if (!parsed_) {
    if (int exit_code = Parse(argc, argv); exit_code >= 0) return exit_code;
  }
  const std::string& component = definition_.component;
  auto fail = [&](const char* step, const absl::Status& status) {
    CRL_LOG(ERROR) << component << ": " << step << ": " << status;
    return 1;
  };
  if (executor_options_.threads < 1) {
    return fail("options", absl::InvalidArgumentError("threads: must be at least 1"));
  }
  ServiceHost host(component, definition_.readiness_service, server_options_);
  if (absl::Status s = host.Init(); !s.ok()) return fail("start-up", s);
  registry_ = host.registry();
  BoundedExecutor executor(executor_options_);
  host.AddExecutor(&executor);
  ServiceSetup setup(&host, &executor, &server_options_);
  if (absl::Status s = build(setup); !s.ok()) return fail("start-up", s);
  if (absl::Status s = host.Start(); !s.ok()) return fail("start-up", s);
  if (setup.warm_up_) {
    if (absl::Status s = setup.warm_up_(); !s.ok()) {
      host.Shutdown();
      return fail("warm-up", s);
    }
  }
  host.SetReady(true);
  return host.RunUntilSignal();
}

}  // namespace crl
