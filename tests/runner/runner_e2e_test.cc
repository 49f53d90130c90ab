// tests/runner/runner_e2e_test.cc — crl-runner end to end in the sandbox:
// the protocol, and the red-team suite of hostile candidates (hostile/*.cc).
// After every hostile run a fresh runner must still work.
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>

#include "crl/kernel.h"
#include "runner/inputs.h"
#include "runner/protocol.h"
#include "runner/sandbox.h"
#include "runner/wire.h"
#include "tests/support/runner_test_util.h"

namespace crl::runner {
namespace {

using testing::AddRequest;
using testing::FreshRunnerWorks;
using testing::HostileLibrary;
using testing::RunnerClient;

// A request with one float32 output of n elements (no inputs).
CallRequest OutputOnly(int64_t n) {
  CallRequest req;
  req.call_id = 77;
  req.outputs = {{"y", CRL_FLOAT32, {n}}};
  return req;
}

// Loads `name` and returns the runner, ready for calls.
void LoadOrFail(RunnerClient* client, const std::string& name) {
  REQUIRE(client->spawned());
  LoadResult load;
  std::string error;
  INFO(error << " log: " << client->process()->LogSoFar());
  REQUIRE(client->Load(HostileLibrary(name), &load, &error));
  INFO(load.error);
  REQUIRE(load.ok);
}

// Runs a call that must NOT come back (the runner dies); returns how it ended.
ExitInfo CallExpectingDeath(const std::string& name, const CallRequest& req,
                            const SandboxPolicy& policy = RunnerClient::HostPolicy()) {
  RunnerClient client(policy);
  LoadOrFail(&client, name);
  CallResult res;
  std::string error;
  CHECK_FALSE(client.Call(req, &res, &error));
  return client.Wait(15);
}

TEST_CASE("good candidate: load, call, timed call, shutdown", "[runner]") {
  RunnerClient client;
  REQUIRE(client.spawned());
  LoadResult load;
  std::string error;
  REQUIRE(client.Load(HostileLibrary("good_add"), &load, &error));
  REQUIRE(load.ok);
  CHECK(load.device_name == "host");

  CallRequest req = AddRequest(4096, 11);
  req.return_inputs = true;
  CallResult res;
  REQUIRE(client.Call(req, &res, &error));
  CHECK(res.call_id == 11);
  REQUIRE(res.status == kOk);
  REQUIRE(res.output_data.size() == 1);
  const float* y = reinterpret_cast<const float*>(res.output_data[0].data());
  for (int i = 0; i < 4096; ++i) REQUIRE(y[i] == static_cast<float>(3 * i + 1));
  CHECK(res.input_data_after == req.input_data);
  CHECK(res.host_seconds >= 0);
  CHECK(res.threads_before >= 1);

  TimedCallRequest timed;
  timed.call_id = 12;
  timed.inputs = {{"a", CRL_FLOAT32, {1000}}, {"b", CRL_FLOAT32, {1000}}};
  timed.outputs = {{"y", CRL_FLOAT32, {1000}}};
  timed.seed = 1234;
  timed.distributions = {"uniform(-1, 1)", "normal(0, 2)"};
  timed.return_outputs = true;
  TimedCallResult tres;
  REQUIRE(client.TimedCall(timed, &tres, &error));
  INFO(tres.error);
  REQUIRE(tres.status == kOk);
  CHECK(tres.host_seconds > 0);
  CHECK(tres.stream_event_seconds == tres.host_seconds);
  CHECK(tres.device_sync_seconds == tres.host_seconds);
  // The worker can regenerate the inputs and check the outputs.
  Distribution da, db;
  REQUIRE(ParseDistribution(timed.distributions[0], &da, &error));
  REQUIRE(ParseDistribution(timed.distributions[1], &db, &error));
  std::string a = Generate(da, CRL_FLOAT32, 1000, DeriveSeed(1234, 0));
  std::string b = Generate(db, CRL_FLOAT32, 1000, DeriveSeed(1234, 1));
  REQUIRE(tres.output_data.size() == 1);
  for (int i = 0; i < 1000; ++i) {
    float av, bv, yv;
    std::memcpy(&av, a.data() + 4 * i, 4);
    std::memcpy(&bv, b.data() + 4 * i, 4);
    std::memcpy(&yv, tres.output_data[0].data() + 4 * i, 4);
    REQUIRE(yv == av + bv);
  }

  // Bad requests are answered, the runner keeps serving.
  CallRequest bad = AddRequest(10, 13);
  bad.input_data[0].resize(3);
  REQUIRE(client.Call(bad, &res, &error));
  CHECK(res.status == kBadRequest);
  bad = AddRequest(10, 14);
  bad.outputs[0].dtype = 99;
  REQUIRE(client.Call(bad, &res, &error));
  CHECK(res.status == kBadRequest);
  timed.distributions = {"normal(0, 1)", "bogus(1)"};
  REQUIRE(client.TimedCall(timed, &tres, &error));
  CHECK(tres.status == kBadRequest);
  REQUIRE(client.Call(AddRequest(10, 15), &res, &error));
  CHECK(res.status == kOk);

  client.Shutdown();
  ExitInfo info = client.Wait(5);
  CHECK(info.kind == ExitInfo::kExited);
  CHECK(info.exit_code == 0);
}

TEST_CASE("load failures are reported, calls then fail cleanly", "[runner]") {
  RunnerClient client;
  LoadResult load;
  std::string error;
  REQUIRE(client.Load("/nonexistent/lib.so", &load, &error));
  CHECK_FALSE(load.ok);
  CHECK(load.error.find("dlopen") != std::string::npos);
  CallResult res;
  REQUIRE(client.Call(AddRequest(4), &res, &error));
  CHECK(res.status == kLoadFailed);

  RunnerClient cuda;
  LoadRequest req;
  req.library_path = HostileLibrary("good_add");
  req.backend = "tpu";
  REQUIRE(WriteMessage(cuda.process()->to_child(), req, &error, 5));
  REQUIRE(ReadMessage(cuda.process()->from_child(), &load, &error, 5));
  CHECK_FALSE(load.ok);
  CHECK(load.error.find("unknown backend") != std::string::npos);
}

TEST_CASE("candidate error codes and threads", "[runner]") {
  {
    RunnerClient client;
    LoadOrFail(&client, "returns_error");
    CallResult res;
    std::string error;
    REQUIRE(client.Call(AddRequest(8), &res, &error));
    CHECK(res.status == kCandidateError);
    CHECK(res.error.find("42") != std::string::npos);
    CHECK(res.output_data.empty());
  }
  {
    RunnerClient client;
    LoadOrFail(&client, "thread_ok");
    CallResult res;
    std::string error;
    REQUIRE(client.Call(AddRequest(100), &res, &error));
    REQUIRE(res.status == kOk);
    CHECK(reinterpret_cast<const float*>(res.output_data[0].data())[99] == 298.0f);
  }
}

TEST_CASE("input mutation and unwritten outputs are visible to the worker", "[runner][redteam]") {
  RunnerClient client;
  LoadOrFail(&client, "mutate_input");
  CallRequest req = AddRequest(64);
  req.return_inputs = true;
  CallResult res;
  std::string error;
  REQUIRE(client.Call(req, &res, &error));
  REQUIRE(res.status == kOk);
  // The runner copied from ITS buffers, not from the rewritten table.
  const float* y = reinterpret_cast<const float*>(res.output_data[0].data());
  CHECK(y[0] == 1.0f);
  uint32_t bits;
  std::memcpy(&bits, res.output_data[0].data() + 4, 4);
  CHECK(bits == kPoisonFloat32);
  CHECK(std::isnan(y[5]));
  CHECK(res.input_data_after[0] != req.input_data[0]);  // zeroed: the worker sees it
  CHECK(res.input_data_after[1] == req.input_data[1]);
}

TEST_CASE("red team: network", "[runner][redteam]") {
  CRL_REQUIRE_SECCOMP();
  ExitInfo info = CallExpectingDeath("net_connect", OutputOnly(4));
  INFO(info.Describe());
  CHECK(info.kind == ExitInfo::kSignaled);
  CHECK(info.seccomp_violation);

  // Unix sockets of the host: every attempt fails, the call completes.
  RunnerClient client;
  LoadOrFail(&client, "unix_connect");
  CallResult res;
  std::string error;
  REQUIRE(client.Call(OutputOnly(4), &res, &error));
  REQUIRE(res.status == kOk);
  CHECK(reinterpret_cast<const float*>(res.output_data[0].data())[0] == 0.0f);
  CHECK(FreshRunnerWorks());
}

TEST_CASE("red team: secrets of the worker are out of reach", "[runner][redteam]") {
  setenv("CRL_SECRET_TEST", "hunter2", 1);
  RunnerClient client;
  LoadOrFail(&client, "read_secret");
  CallResult res;
  std::string error;
  REQUIRE(client.Call(OutputOnly(5), &res, &error));
  REQUIRE(res.status == kOk);
  const float* y = reinterpret_cast<const float*>(res.output_data[0].data());
  CHECK(y[0] == 0.0f);  // not in its environment
  CHECK(y[1] == 0.0f);  // not through init's /proc/1/environ
  CHECK(y[2] == 0.0f);  // init's memory (a copy of the worker's) unreadable
  CHECK(y[3] <= 2.0f);  // sees only init and itself
  if (geteuid() == 0) CHECK(y[4] == 0.0f);  // /etc/shadow unreadable as uid 65534
  CHECK(client.process()->LogSoFar().find("hunter2") == std::string::npos);
}

TEST_CASE("red team: writing outside the private /tmp fails", "[runner][redteam]") {
  RunnerClient client;
  LoadOrFail(&client, "write_outside");
  CallResult res;
  std::string error;
  REQUIRE(client.Call(OutputOnly(5), &res, &error));
  REQUIRE(res.status == kOk);
  const float* y = reinterpret_cast<const float*>(res.output_data[0].data());
  CHECK(y[0] == 0.0f);
  CHECK(y[1] == 0.0f);
  CHECK(y[2] == 1.0f);  // its own /tmp works
  CHECK(y[3] == 0.0f);
  CHECK(y[4] == 0.0f);
  struct stat st;
  CHECK(stat("/work/crl_hostile_probe", &st) != 0);
  CHECK(stat("/tmp/private_probe", &st) != 0);
}

TEST_CASE("red team: fork bomb, ptrace, exec are killed by seccomp", "[runner][redteam]") {
  CRL_REQUIRE_SECCOMP();
  for (const char* name : {"fork_bomb", "ptrace", "exec_shell"}) {
    INFO(name);
    ExitInfo info = CallExpectingDeath(name, OutputOnly(4));
    INFO(info.Describe() << " " << info.log);
    CHECK(info.kind == ExitInfo::kSignaled);
    CHECK(info.seccomp_violation);
    CHECK(info.wall_seconds < 5);
  }
  CHECK(FreshRunnerWorks());
}

TEST_CASE("red team: hostile library constructor runs under seccomp", "[runner][redteam]") {
  CRL_REQUIRE_SECCOMP();
  RunnerClient client;
  LoadResult load;
  std::string error;
  CHECK_FALSE(client.Load(HostileLibrary("ctor_exec"), &load, &error));
  ExitInfo info = client.Wait(5);
  INFO(info.Describe());
  CHECK(info.seccomp_violation);
  CHECK(info.log.find("pwned") == std::string::npos);
  CHECK(FreshRunnerWorks());
}

// What a warm pool's runner is sent (services/worker/formats/native/native_format.h): the
// backend first, then a library by its bytes (its path is outside the
// sandbox it was started in).
LoadRequest WarmOnly() {
  LoadRequest req;
  req.backend = "host";
  req.warm_only = true;
  return req;
}
LoadRequest ByBytes(const std::string& name) {
  LoadRequest req;
  req.library_path = name + ".so";
  req.backend = "host";
  std::ifstream in(HostileLibrary(name), std::ios::binary);
  req.library_bytes.assign(std::istreambuf_iterator<char>(in), {});
  return req;
}

TEST_CASE("a warm runner brings its backend up with no library, then loads one sent as bytes", "[runner]") {
  RunnerClient client;
  LoadResult load;
  std::string error;
  REQUIRE(client.Send(WarmOnly(), &load, &error));
  REQUIRE(load.ok);
  CHECK(load.device_name == "host");
  CallResult res;
  REQUIRE(client.Call(AddRequest(4), &res, &error));
  CHECK(res.status == kLoadFailed);  // nothing loaded yet
  REQUIRE(client.Send(WarmOnly(), &load, &error));
  CHECK_FALSE(load.ok);  // warmed once only
  LoadRequest cuda = ByBytes("good_add");
  cuda.backend = "cuda";
  REQUIRE(client.Send(cuda, &load, &error));
  CHECK_FALSE(load.ok);
  CHECK_THAT(load.error, Catch::Contains("warmed for the host backend"));

  const LoadRequest good = ByBytes("good_add");
  REQUIRE(good.library_bytes.size() > 1000);
  REQUIRE(client.Send(good, &load, &error));
  REQUIRE(load.ok);
  const int64_t n = 1000;
  REQUIRE(client.Call(AddRequest(n), &res, &error));
  REQUIRE(res.status == kOk);
  const float* y = reinterpret_cast<const float*>(res.output_data[0].data());
  CHECK(y[n - 1] == static_cast<float>(3 * (n - 1) + 1));
  REQUIRE(client.Send(good, &load, &error));
  CHECK_FALSE(load.ok);  // one library in a runner's life
  CHECK(load.error == "already loaded");
  client.Shutdown();
  CHECK(client.Wait(5).exit_code == 0);
}

TEST_CASE("red team: a library sent to a warm runner still loads under seccomp", "[runner][redteam]") {
  CRL_REQUIRE_SECCOMP();
  RunnerClient client;
  LoadResult load;
  std::string error;
  REQUIRE(client.Send(WarmOnly(), &load, &error));
  REQUIRE(load.ok);
  CHECK_FALSE(client.Send(ByBytes("ctor_exec"), &load, &error));
  ExitInfo info = client.Wait(5);
  INFO(info.Describe());
  CHECK(info.seccomp_violation);
  CHECK(info.log.find("pwned") == std::string::npos);
}

TEST_CASE("red team: memory bomb hits RLIMIT_AS", "[runner][redteam]") {
  SandboxPolicy p = RunnerClient::HostPolicy();
  p.address_space_bytes = 1ull << 30;
  RunnerClient client(p);
  LoadOrFail(&client, "memory_bomb");
  CallResult res;
  std::string error;
  // operator new fails under RLIMIT_AS; the exception escaping crl_run is
  // reported as the candidate's error.
  REQUIRE(client.Call(OutputOnly(4), &res, &error));
  CHECK(res.status == kCandidateError);
  CHECK(res.error.find("bad_alloc") != std::string::npos);
  client.Shutdown();
  CHECK(client.Wait(5).exit_code == 0);
  CHECK(FreshRunnerWorks());
}

TEST_CASE("red team: disk fill hits RLIMIT_FSIZE", "[runner][redteam]") {
  SandboxPolicy p = RunnerClient::HostPolicy();
  p.file_size_bytes = 8ull << 20;
  p.tmpfs_bytes = 64ull << 20;
  ExitInfo info = CallExpectingDeath("disk_fill", OutputOnly(4), p);
  INFO(info.Describe());
  CHECK(info.kind == ExitInfo::kSignaled);
  CHECK(info.file_size_limit_hit);

  // A tmpfs smaller than the file limit: ENOSPC, reported as a candidate error.
  p.file_size_bytes = 64ull << 20;
  p.tmpfs_bytes = 8ull << 20;
  RunnerClient client(p);
  LoadOrFail(&client, "disk_fill");
  CallResult res;
  std::string error;
  REQUIRE(client.Call(OutputOnly(4), &res, &error));
  CHECK(res.status == kCandidateError);
  CHECK(res.error.find("7") != std::string::npos);
  CHECK(FreshRunnerWorks());
}

TEST_CASE("red team: infinite loop hits the wall and CPU limits", "[runner][redteam]") {
  SandboxPolicy p = RunnerClient::HostPolicy();
  p.wall_timeout_seconds = 1.5;
  {
    RunnerClient client(p);
    LoadOrFail(&client, "infinite_loop");
    std::string error;
    REQUIRE(WriteMessage(client.process()->to_child(), OutputOnly(4), &error, 5));
    ExitInfo info = client.Wait();
    INFO(info.Describe());
    CHECK(info.kind == ExitInfo::kTimedOut);
    CHECK(info.wall_seconds < 4);
  }
  p.wall_timeout_seconds = 10;
  p.cpu_seconds = 1;
  ExitInfo info = CallExpectingDeath("infinite_loop", OutputOnly(4), p);
  INFO(info.Describe());
  CHECK(info.kind == ExitInfo::kSignaled);
  CHECK(info.cpu_limit_hit);
  CHECK(FreshRunnerWorks());
}

TEST_CASE("red team: crashes are reported as signals", "[runner][redteam]") {
  ExitInfo info = CallExpectingDeath("segfault", OutputOnly(4));
  CHECK(info.kind == ExitInfo::kSignaled);
  CHECK(info.signal == SIGSEGV);
  info = CallExpectingDeath("abort", OutputOnly(4));
  CHECK(info.kind == ExitInfo::kSignaled);
  CHECK(info.signal == SIGABRT);
  CHECK(FreshRunnerWorks());
}

TEST_CASE("red team: killing the parent or everything hurts no one outside", "[runner][redteam]") {
  RunnerClient client;
  LoadOrFail(&client, "kill_parent");
  CallResult res;
  std::string error;
  REQUIRE(client.Call(OutputOnly(16), &res, &error));
  CHECK(res.status == kOk);
  CHECK(reinterpret_cast<const float*>(res.output_data[0].data())[15] == 7.0f);
  client.Shutdown();
  CHECK(client.Wait(5).exit_code == 0);
  CHECK(kill(getpid(), 0) == 0);  // we are alive to check it
  CHECK(FreshRunnerWorks());
}

TEST_CASE("red team: verdicts forged on stdout are only log text", "[runner][redteam]") {
  RunnerClient client;
  LoadOrFail(&client, "forge_stdout");
  CallResult res;
  std::string error;
  REQUIRE(client.Call(OutputOnly(8), &res, &error));
  REQUIRE(res.status == kOk);
  for (int i = 0; i < 8; ++i) {
    CHECK(reinterpret_cast<const float*>(res.output_data[0].data())[i] == 0.0f);
  }
  client.Shutdown();
  ExitInfo info = client.Wait(5);
  CHECK(info.log.find("VERDICT: PASS") != std::string::npos);
  CHECK(info.log.find("ALL TESTS PASSED") != std::string::npos);
}

TEST_CASE("consecutive calls never reuse buffer addresses", "[runner]") {
  // Covered indirectly: the runner frees a call's buffers only after the
  // next call's are allocated. Here: many calls in one runner stay correct.
  RunnerClient client;
  LoadOrFail(&client, "good_add");
  std::string error;
  for (int i = 0; i < 50; ++i) {
    CallResult res;
    REQUIRE(client.Call(AddRequest(1 + i * 37, i), &res, &error));
    REQUIRE(res.status == kOk);
    REQUIRE(res.call_id == static_cast<uint64_t>(i));
  }
}

TEST_CASE("without libseccomp the runner refuses to load (fail closed)", "[runner]") {
  if (SeccompAvailable()) return;  // only meaningful in builds without it
  SandboxPolicy p = RunnerClient::HostPolicy();
  p.env = {"PATH=/usr/bin:/bin"};  // no CRL_RUNNER_NO_SECCOMP
  RunnerClient client(p);
  LoadResult load;
  std::string error;
  REQUIRE(client.Load(HostileLibrary("good_add"), &load, &error));
  CHECK_FALSE(load.ok);
  CHECK(load.error.find("seccomp") != std::string::npos);
}

}  // namespace
}  // namespace crl::runner
