// crl-timing: the timing oracle service. It drives one crl-worker's lanes
// through MeasurePair and owns the statistics and trust decisions.
#include <cstdio>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/logging.h"
#include "common/options.h"
#include "common/server.h"
#include "services/timing/eval_client.h"
#include "services/timing/oracle.h"
#include "services/timing/timing_service.h"

int main(int argc, char** argv) {
  crl::BlockTerminationSignals();
  crl::ServerOptions server_options;
  server_options.listen = "127.0.0.1:50052";
  crl::ExecutorOptions executor_options{"timing", 4, 64};
  crl::timing::OracleOptions oracle;
  crl::timing::RewardParams rewards;
  crl::ClientOptions worker_client;
  worker_client.timeout = absl::Minutes(10);
  std::string worker = "127.0.0.1:50051";
  bool calibrate_host = true;
  crl::OptionSet flags("crl-timing", "The timing oracle: speedups with confidence intervals.");
  crl::BindServerOptions(&flags, &server_options);
  flags.Add("worker", &worker, "crl-worker address HOST:PORT whose lanes are measured");
  flags.Add("worker_auth_token_file", &worker_client.auth_token_file,
            "bearer token file for calls to the worker");
  flags.Add("worker_tls", &worker_client.tls, "connect to the worker with TLS");
  flags.Add("worker_tls_ca_file", &worker_client.tls_ca_file, "CA for the worker's certificate");
  flags.Add("threads", &executor_options.threads, "concurrent Time requests");
  flags.Add("max_queue", &executor_options.max_queue,
            "requests that may wait before RESOURCE_EXHAUSTED");
  flags.Add("target_rel_ci", &oracle.target_rel_ci,
            "stop when the speedup's 95% CI half-width is below this fraction");
  flags.Add("budget_seconds", &oracle.budget_seconds, "measuring budget per Time call");
  flags.Add("min_pairs", &oracle.min_pairs, "pairs before the stopping rule applies");
  flags.Add("max_pairs", &oracle.max_pairs, "most pairs per measurement");
  flags.Add("noise_threshold", &oracle.noise_threshold,
            "relative spread (MAD/median) above which a measurement is re-taken");
  flags.Add("jump_speedup", &oracle.jump_speedup, "speedups above this are re-measured");
  flags.Add("calibrate_host", &calibrate_host,
            "measure this machine's copy bandwidth as the host backend's ceiling");
  flags.Add("reward_clip", &rewards.clip_k, "CUDA-L1 preset: clip rewards to [-k, k]");
  if (int exit_code = flags.ParseForMain(argc, argv); exit_code >= 0) return exit_code;

  crl::ServiceHost host("crl-timing", "crl.v1.TimingService", server_options);
  if (absl::Status s = host.Init(); !s.ok()) {
    CRL_LOG(ERROR) << s;
    return 1;
  }
  auto client = crl::timing::GrpcEvalClient::Create(worker, worker_client);
  if (!client.ok()) {
    CRL_LOG(ERROR) << client.status();
    return 1;
  }
  crl::timing::TimingOracle timing_oracle(oracle, client->get(), crl::RealClock::Get());
  if (calibrate_host) {
    timing_oracle.SetHostCeiling({crl::timing::MeasureHostCopyBandwidth(), 0});
  }
  crl::BoundedExecutor executor(executor_options);
  crl::TimingServiceImpl service(&timing_oracle, rewards, host.call_env(&executor));
  host.AddService(&service);
  host.AddExecutor(&executor);
  if (absl::Status s = host.Start(); !s.ok()) {
    CRL_LOG(ERROR) << s;
    return 1;
  }
  host.SetReady(true);
  return host.RunUntilSignal();
}
