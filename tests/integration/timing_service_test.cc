// crl-timing as a real service: TLS on its port, driving a real crl-worker
// (token-protected) over gRPC, end to end on the host backend.
#include <catch2/catch.hpp>
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "common/file.h"
#include "crl/v1/timing.grpc.pb.h"
#include "tests/support/service_process.h"

namespace crl::testing {
namespace {

const std::string kBin = CRL_BIN_DIR;
const std::string kTasks = std::string(CRL_SOURCE_DIR) + "/tasks/native";

std::string ReadFile(const std::string& path) {
  return ReadFileToString(path, "test file").value_or("");
}

// A token-protected host worker with its caches under `dir`.
std::vector<std::string> WorkerArgs(const TempDir& dir, const std::string& token,
                                    std::vector<std::string> extra) {
  std::vector<std::string> args = {
      "--listen=127.0.0.1:0",         "--metrics_listen=127.0.0.1:0",
      "--auth_token_file=" + token,   "--gpus=",
      "--cache_dir=" + dir.path() + "/cache", "--work_dir=" + dir.path() + "/w",
      "--drain_delay=0s",             "--log_level=warning"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

TEST_CASE("crl-timing over TLS times a candidate on a real worker", "[integration][timing]") {
  TempDir dir;
  const std::string cert = dir.path() + "/cert.pem", key = dir.path() + "/key.pem";
  const std::string token = dir.path() + "/token";
  std::ofstream(token) << "worker-token\n";
  std::string openssl = "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost "
                        "-addext subjectAltName=IP:127.0.0.1,DNS:localhost -keyout " +
                        key + " -out " + cert + " >/dev/null 2>&1";
  REQUIRE(std::system(openssl.c_str()) == 0);

  ServiceProcess worker(kBin + "/crl-worker", WorkerArgs(dir, token, {"--task_root=" + kTasks}));
  REQUIRE(worker.started());
  ServiceProcess timing(kBin + "/crl-timing",
                        {"--listen=127.0.0.1:0", "--metrics_listen=127.0.0.1:0",
                         "--worker=" + worker.grpc_address(), "--worker_auth_token_file=" + token,
                         "--tls_cert_file=" + cert, "--tls_key_file=" + key, "--budget_seconds=4",
                         "--min_pairs=10", "--max_pairs=30", "--target_rel_ci=0.05",
                         "--drain_delay=0s", "--log_level=warning"});
  REQUIRE(timing.started());

  // The CLI's health check speaks TLS; a plaintext client cannot connect.
  std::string health = kBin + "/crl health --tls --tls_ca_file " + cert + " --service " +
                       "crl.v1.TimingService " + timing.grpc_address();
  CHECK(std::system((health + " >/dev/null 2>&1").c_str()) == 0);
  std::string plain = kBin + "/crl health --timeout 2s " + timing.grpc_address();
  CHECK(std::system((plain + " >/dev/null 2>&1").c_str()) != 0);

  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = ReadFile(cert);
  auto channel = grpc::CreateChannel(timing.grpc_address(), grpc::SslCredentials(ssl));
  auto stub = v1::TimingService::NewStub(channel);

  v1::TimeRequest req;
  req.mutable_task()->set_path("row_sum");
  req.mutable_candidate()->set_source(ReadFile(kTasks + "/row_sum/candidates/fast_correct.cc"));
  req.mutable_candidate()->set_backend(v1::BACKEND_HOST);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(3));
  v1::TimeResponse resp;
  grpc::Status s = stub->Time(&ctx, req, &resp);
  REQUIRE(s.ok());
  INFO(resp.ShortDebugString().substr(0, 2000));
  CHECK(resp.verdict() == v1::VERDICT_OK);
  CHECK(resp.speedup() > 1.2);
  CHECK(resp.ref_samples_size() >= 10);

  v1::ComputeRewardRequest reward;
  reward.set_verdict(resp.verdict());
  reward.set_speedup(resp.speedup());
  reward.mutable_flags()->CopyFrom(resp.flags());
  reward.set_preset(v1::REWARD_PRESET_CUDA_L1);
  grpc::ClientContext rctx;
  v1::RewardResult result;
  REQUIRE(stub->ComputeReward(&rctx, reward, &result).ok());
  if (resp.flags_size() == 0) {
    CHECK(result.status() == v1::REWARD_STATUS_OK);
    CHECK(result.reward() == Approx(std::min(resp.speedup() - 1, 3.0)));
  } else {
    CHECK(result.status() == v1::REWARD_STATUS_WITHHELD);
  }

  // The one place worker addresses are configured: the orchestrator reads
  // them from here.
  grpc::ClientContext lctx;
  v1::WorkerAddresses listed;
  REQUIRE(stub->ListWorkers(&lctx, v1::ListWorkersRequest(), &listed).ok());
  REQUIRE(listed.addresses_size() == 1);
  CHECK(listed.addresses(0) == worker.grpc_address());

  // A worker that is gone is an infrastructure error, not a verdict.
  worker.Signal(SIGTERM);
  CHECK(worker.Wait(30) == 0);
  grpc::ClientContext dead_ctx;
  dead_ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  v1::TimeResponse dead;
  grpc::Status gone = stub->Time(&dead_ctx, req, &dead);
  CHECK(gone.error_code() == grpc::StatusCode::UNAVAILABLE);

  timing.Signal(SIGTERM);
  CHECK(timing.Wait(30) == 0);
}

// Runs a shell command; returns its exit code and stdout.
std::pair<int, std::string> Run(const std::string& command) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  if (!p) return {-1, ""};
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

TEST_CASE("crl eval times a remote worker's candidate through crl-timing, never around it",
          "[integration][timing]") {
  TempDir dir;
  const std::string token = dir.path() + "/token";
  std::ofstream(token) << "worker-token\n";
  ServiceProcess worker(kBin + "/crl-worker", WorkerArgs(dir, token, {}));
  REQUIRE(worker.started());
  ServiceProcess timing(kBin + "/crl-timing",
                        {"--listen=127.0.0.1:0", "--metrics_listen=127.0.0.1:0",
                         "--worker=" + worker.grpc_address(), "--worker_auth_token_file=" + token,
                         "--budget_seconds=4", "--min_pairs=10", "--max_pairs=30",
                         "--target_rel_ci=0.05", "--drain_delay=0s", "--log_level=warning"});
  REQUIRE(timing.started());
  const std::string eval = kBin + "/crl eval --task " + kTasks + "/row_sum --candidate " + kTasks +
                           "/row_sum/candidates/fast_correct.cc --backend host --json --time " +
                           "--auth_token_file " + token + " --worker " + worker.grpc_address();

  // Without --timing there is no second, in-process oracle to fall back on.
  auto [refused, refused_out] = Run(eval + " 2>&1");
  CHECK(refused == 2);
  CHECK_THAT(refused_out, Catch::Contains("--timing"));

  auto [code, out] = Run(eval + " --timing " + timing.grpc_address());
  INFO(out);
  REQUIRE(code == 0);
  CHECK_THAT(out, Catch::Contains("\"timing_status\": \"OK\""));
  CHECK_THAT(out, Catch::Contains("\"speedup\""));
  // The measurement went through crl-timing: its metrics counted it.
  std::string metrics = HttpGet(timing.metrics_port(), "/metrics");
  CHECK_THAT(metrics, Catch::Contains("crl_timing_results_total{verdict=\"ok\"} 1"));

  timing.Signal(SIGTERM);
  CHECK(timing.Wait(30) == 0);
  worker.Signal(SIGTERM);
  CHECK(worker.Wait(30) == 0);
}

}  // namespace
}  // namespace crl::testing
