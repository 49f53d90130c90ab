// tests/runner/test_util.cc — see test_util.h.
#include "tests/support/runner_test_util.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <mutex>

#include "crl/kernel.h"
#include "runner/wire.h"

namespace crl::runner::testing {

void IgnoreSigpipe() {
  static std::once_flag once;
  std::call_once(once, [] { signal(SIGPIPE, SIG_IGN); });
}

SandboxPolicy TestPolicy() {
  SandboxPolicy p;
  p.wall_timeout_seconds = 10;
  p.cpu_seconds = 10;
  p.tmpfs_bytes = 64ull << 20;
  p.file_size_bytes = 64ull << 20;
  return p;
}

ExitInfo RunSandboxed(const SandboxPolicy& policy, const std::vector<std::string>& argv) {
  std::string error;
  auto proc = SpawnSandboxed(policy, argv, &error);
  if (!proc) {
    ExitInfo info;
    info.kind = ExitInfo::kSetupFailed;
    info.setup_error = "spawn: " + error;
    return info;
  }
  proc->CloseToChild();
  return proc->Wait();
}

std::string HostileLibrary(const std::string& name) {
  return std::string(CRL_HOSTILE_DIR) + "/" + name + ".so";
}

namespace {
std::string DirName(const std::string& p) { return p.substr(0, p.rfind('/')); }
}  // namespace

SandboxPolicy RunnerClient::HostPolicy() {
  SandboxPolicy p = TestPolicy();
  p.address_space_bytes = 4ull << 30;
  p.readonly_paths = {DirName(CRL_RUNNER_PATH), CRL_HOSTILE_DIR};
  // Builds without libseccomp can still run the tests that do not need it.
  if (!SeccompAvailable()) p.env.push_back("CRL_RUNNER_NO_SECCOMP=1");
  return p;
}

RunnerClient::RunnerClient(const SandboxPolicy& policy) {
  IgnoreSigpipe();
  std::string error;
  proc_ = SpawnSandboxed(policy, {CRL_RUNNER_PATH}, &error);
}

RunnerClient::~RunnerClient() {
  if (proc_) proc_->Kill();
}

bool RunnerClient::Load(const std::string& library, LoadResult* result, std::string* error) {
  LoadRequest req;
  req.library_path = library;
  req.backend = "host";
  return Send(req, result, error);
}

bool RunnerClient::Send(const LoadRequest& req, LoadResult* result, std::string* error) {
  return WriteMessage(proc_->to_child(), req, error, 10) &&
         ReadMessage(proc_->from_child(), result, error, 10);
}

bool RunnerClient::Call(const CallRequest& req, CallResult* result, std::string* error) {
  return WriteMessage(proc_->to_child(), req, error, 10) &&
         ReadMessage(proc_->from_child(), result, error, 10);
}

bool RunnerClient::TimedCall(const TimedCallRequest& req, TimedCallResult* result,
                             std::string* error) {
  return WriteMessage(proc_->to_child(), req, error, 10) &&
         ReadMessage(proc_->from_child(), result, error, 10);
}

void RunnerClient::Shutdown() {
  std::string error;
  WriteMessage(proc_->to_child(), crl::runner::Shutdown{}, &error, 5);
}

ExitInfo RunnerClient::Wait(double timeout_seconds) { return proc_->Wait(timeout_seconds); }

CallRequest AddRequest(int64_t n, uint64_t call_id) {
  CallRequest req;
  req.call_id = call_id;
  req.inputs = {{"a", CRL_FLOAT32, {n}}, {"b", CRL_FLOAT32, {n}}};
  req.outputs = {{"y", CRL_FLOAT32, {n}}};
  std::vector<float> a(n), b(n);
  for (int64_t i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i);
    b[i] = static_cast<float>(2 * i + 1);
  }
  req.input_data = {std::string(reinterpret_cast<char*>(a.data()), n * 4),
                    std::string(reinterpret_cast<char*>(b.data()), n * 4)};
  return req;
}

bool FreshRunnerWorks() {
  RunnerClient client;
  if (!client.spawned()) return false;
  LoadResult load;
  std::string error;
  if (!client.Load(HostileLibrary("good_add"), &load, &error) || !load.ok) return false;
  const int64_t n = 1000;
  CallResult res;
  if (!client.Call(AddRequest(n), &res, &error) || res.status != kOk) return false;
  if (res.output_data.size() != 1 || res.output_data[0].size() != n * 4) return false;
  const float* y = reinterpret_cast<const float*>(res.output_data[0].data());
  for (int64_t i = 0; i < n; ++i) {
    if (y[i] != static_cast<float>(3 * i + 1)) return false;
  }
  client.Shutdown();
  ExitInfo info = client.Wait(5);
  return info.kind == ExitInfo::kExited && info.exit_code == 0;
}

}  // namespace crl::runner::testing
