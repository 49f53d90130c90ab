// A real crl-worker over loopback: health, reflection, metrics, auth and a
// graceful drain with a call in flight.
#include <catch2/catch.hpp>
#include <signal.h>

#include <grpcpp/grpcpp.h>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <condition_variable>
#include <mutex>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "common/file.h"
#include "crl/v1/eval.grpc.pb.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "reflection_list.grpc.pb.h"
#include "tests/support/service_process.h"
#include "tests/support/wait.h"

namespace crl::testing {
namespace {

using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;

const std::string kBin = CRL_BIN_DIR;
const std::string kTasks = std::string(CRL_SOURCE_DIR) + "/tasks/native";

std::string ReadFile(const std::string& path) {
  return ReadFileToString(path, "test file").value_or("");
}

// The token lives outside /tmp (which the sandbox replaces, hiding it for
// another reason; the checkout itself may be under /tmp) and is
// world-readable, so only the worker's masking keeps it from candidates.
std::string TokenPath() {
  std::string dir = "/var/tmp/crl-test-secrets";
  std::filesystem::create_directories(dir);
  return dir + "/token-" + std::to_string(::getpid());
}

struct Worker {
  TempDir dir;
  std::string token_file = TokenPath();
  std::unique_ptr<ServiceProcess> process;
  std::shared_ptr<grpc::Channel> channel;

  ~Worker() { std::filesystem::remove(token_file); }
  Worker() {
    std::ofstream(token_file) << "s3cret-token\n";
    std::filesystem::permissions(token_file, std::filesystem::perms::owner_read |
                                                 std::filesystem::perms::owner_write |
                                                 std::filesystem::perms::group_read |
                                                 std::filesystem::perms::others_read);
    process = std::make_unique<ServiceProcess>(
        kBin + "/crl-worker",
        std::vector<std::string>{"--listen=127.0.0.1:0", "--metrics_listen=127.0.0.1:0",
                                 "--auth_token_file=" + token_file, "--drain_delay=1s",
                                 "--shutdown_timeout=30s", "--cache_dir=" + dir.path() + "/cache",
                                 "--work_dir=" + dir.path() + "/work", "--task_root=" + kTasks,
                                 "--gpus=", "--log_level=warning"});
    REQUIRE(process->started());
    channel = grpc::CreateChannel(process->grpc_address(), grpc::InsecureChannelCredentials());
    // Live at once; ready after its start-up self-test (a compile and a
    // verification: about a second).
    CHECK(Health("") == HealthCheckResponse::SERVING);
    testing::Eventually([&] { return Health("crl.v1.EvalService") == HealthCheckResponse::SERVING; },
                        absl::Seconds(60), absl::Milliseconds(100));
  }

  HealthCheckResponse::ServingStatus Health(const std::string& service) {
    auto stub = grpc::health::v1::Health::NewStub(channel);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    HealthCheckRequest req;
    req.set_service(service);
    HealthCheckResponse resp;
    grpc::Status s = stub->Check(&ctx, req, &resp);
    return s.ok() ? resp.status() : HealthCheckResponse::UNKNOWN;
  }

  void Authorize(grpc::ClientContext* ctx, const std::string& token = "s3cret-token") {
    ctx->AddMetadata("authorization", "Bearer " + token);
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
  }
};

v1::EvaluateRequest SoftmaxRequest(const std::string& candidate) {
  v1::EvaluateRequest req;
  req.mutable_task()->set_path("softmax_rows");
  std::string source = ReadFile(kTasks + "/softmax_rows/candidates/" + candidate);
  // A unique comment defeats the build cache, so the call really compiles.
  source += "\n// " + std::to_string(std::random_device()()) + "\n";
  req.mutable_candidate()->set_source(source);
  req.mutable_candidate()->set_backend(v1::BACKEND_HOST);
  return req;
}

TEST_CASE("liveness, readiness, reflection and metrics on a real worker", "[integration]") {
  Worker w;
  CHECK(w.Health("") == HealthCheckResponse::SERVING);
  CHECK(w.Health("crl.v1.EvalService") == HealthCheckResponse::SERVING);

  // Reflection lists the services.
  auto refl = grpc::reflection::v1alpha::ServerReflection::NewStub(w.channel);
  grpc::ClientContext ctx;
  auto stream = refl->ServerReflectionInfo(&ctx);
  grpc::reflection::v1alpha::ServerReflectionRequest req;
  req.set_list_services("*");
  REQUIRE(stream->Write(req));
  stream->WritesDone();
  grpc::reflection::v1alpha::ServerReflectionResponse resp;
  REQUIRE(stream->Read(&resp));
  std::vector<std::string> names;
  for (const auto& s : resp.list_services_response().service()) names.push_back(s.name());
  CHECK(std::find(names.begin(), names.end(), "crl.v1.EvalService") != names.end());
  CHECK(std::find(names.begin(), names.end(), "grpc.health.v1.Health") != names.end());
  while (stream->Read(&resp)) {
  }
  CHECK(stream->Finish().ok());

  // One authorized RPC so the request counters have a sample.
  auto stub = v1::EvalService::NewStub(w.channel);
  grpc::ClientContext info_ctx;
  w.Authorize(&info_ctx);
  v1::WorkerInfo info;
  REQUIRE(stub->GetWorkerInfo(&info_ctx, v1::GetWorkerInfoRequest(), &info).ok());
  CHECK(info.lanes_size() >= 1);

  std::string metrics = HttpGet(w.process->metrics_port(), "/metrics");
  CHECK(metrics.find("crl_build_info{component=\"crl-worker\"") != std::string::npos);
  CHECK(metrics.find("crl_ready 1") != std::string::npos);
  CHECK(metrics.find("crl_rpc_requests_total{") != std::string::npos);
  CHECK(metrics.find("/crl.v1.EvalService/GetWorkerInfo") != std::string::npos);
  CHECK(metrics.find("crl_rpc_duration_seconds_bucket") != std::string::npos);
  CHECK(metrics.find("crl_worker_queue_depth") != std::string::npos);

  w.process->Signal(SIGTERM);
  CHECK(w.process->Wait(30) == 0);
}

TEST_CASE("a worker whose self-test fails never turns ready and exits naming it", "[integration]") {
  TempDir dir;
  // A "compiler" that fails everything: the shipped reference cannot build.
  ServiceProcess p(kBin + "/crl-worker",
                   {"--listen=127.0.0.1:0", "--metrics_listen=127.0.0.1:0", "--gpus=", "--gxx=/bin/false",
                    "--cache_dir=" + dir.path() + "/cache", "--work_dir=" + dir.path() + "/work",
                    "--drain_delay=0s", "--log_level=warning"});
  REQUIRE(p.started());  // it listens (liveness) while the self-test runs
  CHECK(p.Wait(60) == 1);
}

TEST_CASE("calls without the right bearer token are UNAUTHENTICATED", "[integration]") {
  Worker w;
  auto stub = v1::EvalService::NewStub(w.channel);
  v1::WorkerInfo info;
  {
    grpc::ClientContext ctx;
    CHECK(stub->GetWorkerInfo(&ctx, v1::GetWorkerInfoRequest(), &info).error_code() ==
          grpc::StatusCode::UNAUTHENTICATED);
  }
  {
    grpc::ClientContext ctx;
    w.Authorize(&ctx, "wrong-token");
    CHECK(stub->GetWorkerInfo(&ctx, v1::GetWorkerInfoRequest(), &info).error_code() ==
          grpc::StatusCode::UNAUTHENTICATED);
  }
  {
    grpc::ClientContext ctx;
    w.Authorize(&ctx, "wrong-token");
    v1::EvaluateResponse resp;
    CHECK(stub->Evaluate(&ctx, SoftmaxRequest("fast_correct.cc"), &resp).error_code() ==
          grpc::StatusCode::UNAUTHENTICATED);
  }
  {
    grpc::ClientContext ctx;
    w.Authorize(&ctx);
    CHECK(stub->GetWorkerInfo(&ctx, v1::GetWorkerInfoRequest(), &info).ok());
  }
}

TEST_CASE("malformed requests get INVALID_ARGUMENT naming the field; the worker keeps serving",
          "[integration]") {
  Worker w;
  auto stub = v1::EvalService::NewStub(w.channel);
  auto call = [&](const v1::EvaluateRequest& req) {
    grpc::ClientContext ctx;
    w.Authorize(&ctx);
    v1::EvaluateResponse resp;
    return stub->Evaluate(&ctx, req, &resp);
  };
  v1::EvaluateRequest no_source = SoftmaxRequest("fast_correct.cc");
  no_source.mutable_candidate()->clear_source();
  grpc::Status s = call(no_source);
  CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(s.error_message().find("candidate.source") != std::string::npos);

  v1::EvaluateRequest escape = SoftmaxRequest("fast_correct.cc");
  escape.mutable_task()->set_path("../../../etc");
  s = call(escape);
  CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(s.error_message().find("outside the task root") != std::string::npos);

  v1::EvaluateRequest bad_bundle = SoftmaxRequest("fast_correct.cc");
  bad_bundle.mutable_task()->clear_path();
  auto* f = bad_bundle.mutable_task()->add_files();
  f->set_path("task.yaml");
  f->set_content("name: Bad Name\n");
  s = call(bad_bundle);
  CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(s.error_message().find("task.yaml:1: name") != std::string::npos);

  // Still serving.
  grpc::ClientContext ctx;
  w.Authorize(&ctx);
  v1::EvaluateResponse resp;
  REQUIRE(stub->Evaluate(&ctx, SoftmaxRequest("fast_correct.cc"), &resp).ok());
  CHECK(resp.verdict() == v1::VERDICT_OK);
}

TEST_CASE("a candidate cannot read the worker's token, even through the compiler", "[integration]") {
  Worker w;
  auto stub = v1::EvalService::NewStub(w.channel);
  v1::EvaluateRequest req = SoftmaxRequest("fast_correct.cc");
  // The compiler would echo the offending line of an included file.
  req.mutable_candidate()->set_source("#include \"" + w.token_file + "\"\n" +
                                      req.candidate().source());
  grpc::ClientContext ctx;
  w.Authorize(&ctx);
  v1::EvaluateResponse resp;
  REQUIRE(stub->Evaluate(&ctx, req, &resp).ok());
  CHECK(resp.compile().log().find("s3cret") == std::string::npos);
  for (const auto& m : resp.messages()) CHECK(m.find("s3cret") == std::string::npos);
  // Masked means empty, so the candidate still compiles and verifies.
  CHECK(resp.verdict() == v1::VERDICT_OK);
}

// The value of an unlabelled gauge in a /metrics page (-1 if absent).
double Gauge(const std::string& metrics, const std::string& name) {
  size_t at = metrics.find("\n" + name + " ");
  if (at == std::string::npos) return -1;
  return std::stod(metrics.substr(at + name.size() + 2));
}

TEST_CASE("a client that cancels frees the worker's lane at once", "[integration]") {
  Worker w;
  auto stub = v1::EvalService::NewStub(w.channel);
  // A candidate that never returns, under a 120 s per-call limit: only the
  // cancellation can free the lane early.
  v1::EvaluateRequest spin;
  spin.mutable_task()->set_path("row_sum");
  spin.mutable_candidate()->set_source(ReadFile(kTasks + "/row_sum/candidates/timeout_spin.cc") +
                                       "\n// " + std::to_string(std::random_device()()) + "\n");
  spin.mutable_candidate()->set_backend(v1::BACKEND_HOST);
  spin.mutable_options()->set_call_timeout_seconds(120);
  grpc::ClientContext ctx;
  w.Authorize(&ctx);
  v1::EvaluateResponse resp;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  grpc::Status status;
  stub->async()->Evaluate(&ctx, &spin, &resp, [&](grpc::Status s) {
    std::lock_guard<std::mutex> lock(mu);
    status = s;
    done = true;
    cv.notify_all();
  });
  auto lanes_busy = [&] { return Gauge(HttpGet(w.process->metrics_port(), "/metrics"),
                                       "crl_worker_lanes_busy"); };
  const bool busy = testing::Eventually([&] { return lanes_busy() == 1; }, absl::Seconds(60), absl::Milliseconds(20));
  REQUIRE(busy);  // compiled, verifying: the spinning call holds the lane
  const auto cancelled_at = std::chrono::steady_clock::now();
  ctx.TryCancel();
  {
    std::unique_lock<std::mutex> lock(mu);
    REQUIRE(cv.wait_for(lock, std::chrono::seconds(60), [&] { return done; }));
  }
  CHECK(status.error_code() == grpc::StatusCode::CANCELLED);
  const bool freed =
      testing::Eventually([&] { return lanes_busy() == 0; }, absl::Seconds(60), absl::Milliseconds(20));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - cancelled_at).count();
  INFO("lane freed " << seconds << " s after the cancel");
  REQUIRE(freed);
  CHECK(seconds < 5);  // a sliced wait, not the 120 s call limit (typically ~0.3 s)

  // The worker serves the next request on that lane.
  grpc::ClientContext next_ctx;
  w.Authorize(&next_ctx);
  v1::EvaluateResponse next;
  REQUIRE(stub->Evaluate(&next_ctx, SoftmaxRequest("fast_correct.cc"), &next).ok());
  CHECK(next.verdict() == v1::VERDICT_OK);
}

TEST_CASE("SIGTERM drains: readiness goes off and the in-flight call completes",
          "[integration]") {
  Worker w;
  auto stub = v1::EvalService::NewStub(w.channel);
  grpc::ClientContext ctx;
  w.Authorize(&ctx);
  v1::EvaluateResponse resp;
  grpc::Status status;
  bool done = false;
  std::mutex mu;
  std::condition_variable cv;
  stub->async()->Evaluate(&ctx, new v1::EvaluateRequest(SoftmaxRequest("slow_correct.cc")),
                          &resp, [&](grpc::Status s) {
                            std::lock_guard<std::mutex> lock(mu);
                            status = s;
                            done = true;
                            cv.notify_all();
                          });
  // Wait until the server counts the call as in flight.
  REQUIRE(testing::Eventually(
      [&] { return HttpGet(w.process->metrics_port(), "/metrics").find("crl_rpc_in_flight 1") != std::string::npos; },
      absl::Seconds(5), absl::Milliseconds(10)));
  w.process->Signal(SIGTERM);
  // During the drain delay the server still answers, but is not ready: health
  // turns NOT_SERVING while the call is still in flight.
  CHECK(testing::Eventually([&] { return w.Health("crl.v1.EvalService") == HealthCheckResponse::NOT_SERVING; },
                            absl::Seconds(5), absl::Milliseconds(10)));
  {
    std::unique_lock<std::mutex> lock(mu);
    REQUIRE(cv.wait_for(lock, std::chrono::seconds(120), [&] { return done; }));
  }
  CHECK(status.ok());
  CHECK(resp.verdict() == v1::VERDICT_OK);
  CHECK(w.process->Wait(60) == 0);
}

}  // namespace
}  // namespace crl::testing
