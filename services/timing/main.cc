// crl-timing: the timing oracle service.
#include <cstdio>
#include <string>
#include <vector>

#include "common/logging.h"
#include "common/options.h"
#include "common/server.h"
#include "services/timing/timing_service.h"

int main(int argc, char** argv) {
  crl::BlockTerminationSignals();
  crl::ServerOptions server_options;
  server_options.listen = "127.0.0.1:50052";
  crl::ExecutorOptions executor_options{"timing", 2, 64};
  crl::OptionSet flags("crl-timing", "The timing oracle: speedups with confidence intervals.");
  crl::BindServerOptions(&flags, &server_options);
  flags.Add("threads", &executor_options.threads, "measurement threads");
  flags.Add("max_queue", &executor_options.max_queue,
            "requests that may wait before RESOURCE_EXHAUSTED");
  if (absl::Status s = flags.Parse(argc, argv, nullptr); !s.ok() || flags.help_requested()) {
    if (!s.ok()) std::fprintf(stderr, "crl-timing: %s\n", std::string(s.message()).c_str());
    std::fputs(flags.Usage().c_str(), s.ok() ? stdout : stderr);
    return s.ok() ? 0 : 2;
  }

  crl::ServiceHost host("crl-timing", "crl.v1.TimingService", server_options);
  if (absl::Status s = host.Init(); !s.ok()) {
    CRL_LOG(ERROR) << s;
    return 1;
  }
  crl::BoundedExecutor executor(executor_options);
  crl::TimingServiceImpl service(host.call_env(&executor));
  host.AddService(&service);
  host.AddExecutor(&executor);
  if (absl::Status s = host.Start(); !s.ok()) {
    CRL_LOG(ERROR) << s;
    return 1;
  }
  host.SetReady(true);
  return host.RunUntilSignal();
}
