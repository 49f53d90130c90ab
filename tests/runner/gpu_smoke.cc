// tests/runner/gpu_smoke.cc — crl_runner_gpu_smoke: the CUDA backend end to
// end in the sandbox (built only with CRL_WITH_CUDA; no Catch2 so it builds
// on bare GPU machines). Prints one line per check; exit 0 when all pass,
// or when no GPU is present (prints SKIP).
//
// Checks: context creation inside the sandbox with only the NVIDIA device
// nodes bound; correctness call; timed call with worker-side regeneration of
// the inputs; side-stream work (stream-event time << device-wide time);
// seccomp still kills fork() after CUDA init; a faulting kernel gives
// kCudaError and exit code 3; a fresh runner works afterwards.
#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "crl/kernel.h"
#include "runner/inputs.h"
#include "runner/protocol.h"
#include "runner/sandbox.h"
#include "runner/seccomp.h"
#include "runner/wire.h"
#include "tests/support/runner_test_util.h"

namespace crl::runner {
namespace {

using testing::AddRequest;
using testing::HostileLibrary;
using testing::RunnerClient;

int g_failures = 0;

void Check(bool ok, const std::string& what) {
  std::printf("%s %s\n", ok ? "PASS" : "FAIL", what.c_str());
  std::fflush(stdout);
  if (!ok) ++g_failures;
}

std::vector<std::string> NvidiaNodes() {
  std::vector<std::string> nodes;
  for (const char* dir : {"/dev", "/dev/nvidia-caps"}) {
    DIR* d = opendir(dir);
    if (d == nullptr) continue;
    while (struct dirent* e = readdir(d)) {
      std::string path = std::string(dir) + "/" + e->d_name;
      struct stat st;
      if (std::strncmp(e->d_name, "nvidia", 6) == 0 && stat(path.c_str(), &st) == 0 &&
          S_ISCHR(st.st_mode)) {
        nodes.push_back(path);
      }
    }
    closedir(d);
  }
  return nodes;
}

SandboxPolicy GpuPolicy() {
  SandboxPolicy p = RunnerClient::HostPolicy();
  p.address_space_bytes = 0;  // CUDA reserves huge virtual ranges
  p.wall_timeout_seconds = 60;
  p.cpu_seconds = 60;
  p.extra_device_nodes = NvidiaNodes();
  // The driver may live outside the default library path.
  if (const char* ld = getenv("LD_LIBRARY_PATH")) p.env.push_back(std::string("LD_LIBRARY_PATH=") + ld);
  return p;
}

bool LoadCuda(RunnerClient* client, const std::string& name, LoadResult* load) {
  LoadRequest req;
  req.library_path = HostileLibrary(name);
  req.backend = "cuda";
  std::string error;
  bool ok = WriteMessage(client->process()->to_child(), req, &error, 60) &&
            ReadMessage(client->process()->from_child(), load, &error, 60);
  if (!ok) std::printf("  load %s: %s\n  log: %s\n", name.c_str(), error.c_str(),
                       client->process()->LogSoFar().c_str());
  else if (!load->ok) std::printf("  load %s: %s\n", name.c_str(), load->error.c_str());
  return ok && load->ok;
}

TimedCallRequest TimedAdd(int64_t n, uint64_t seed) {
  TimedCallRequest t;
  t.call_id = seed;
  t.inputs = {{"a", CRL_FLOAT32, {n}}, {"b", CRL_FLOAT32, {n}}};
  t.outputs = {{"y", CRL_FLOAT32, {n}}};
  t.seed = seed;
  t.distributions = {"uniform(-1, 1)", "normal(0, 2)"};
  t.return_outputs = true;
  return t;
}

bool OutputsMatchRegenerated(const TimedCallRequest& t, const TimedCallResult& r) {
  if (r.output_data.size() != 1) return false;
  int64_t n = t.inputs[0].shape[0];
  std::string error;
  Distribution da, db;
  ParseDistribution(t.distributions[0], &da, &error);
  ParseDistribution(t.distributions[1], &db, &error);
  std::string a = Generate(da, CRL_FLOAT32, n, DeriveSeed(t.seed, 0));
  std::string b = Generate(db, CRL_FLOAT32, n, DeriveSeed(t.seed, 1));
  for (int64_t i = 0; i < n; ++i) {
    float av, bv, yv;
    std::memcpy(&av, a.data() + 4 * i, 4);
    std::memcpy(&bv, b.data() + 4 * i, 4);
    std::memcpy(&yv, r.output_data[0].data() + 4 * i, 4);
    if (yv != av + bv) return false;
  }
  return true;
}

void Run() {
  std::string error;
  {
    RunnerClient client(GpuPolicy());
    LoadResult load;
    bool loaded = LoadCuda(&client, "cuda_add", &load);
    Check(loaded, "cuda runner loads in the sandbox: " + load.device_name);
    const int64_t n = 1 << 20;
    CallResult res;
    bool ok = client.Call(AddRequest(n, 1), &res, &error) && res.status == kOk;
    if (ok) {
      const float* y = reinterpret_cast<const float*>(res.output_data[0].data());
      for (int64_t i = 0; i < n && ok; ++i) ok = y[i] == static_cast<float>(3 * i + 1);
    }
    Check(ok, "correctness call (1M floats) " + error + " " + res.error);
    for (int i = 0; i < 5; ++i) {
      TimedCallRequest t = TimedAdd(n, 100 + i);
      TimedCallResult r;
      bool tok = client.TimedCall(t, &r, &error) && r.status == kOk;
      std::printf("  timed add 1M: stream %.1f us, device %.1f us, host %.1f us\n",
                  r.stream_event_seconds * 1e6, r.device_sync_seconds * 1e6, r.host_seconds * 1e6);
      if (i == 4) Check(tok && OutputsMatchRegenerated(t, r), "timed call outputs match regenerated inputs");
    }
    client.Shutdown();
    ExitInfo info = client.Wait(20);
    Check(info.kind == ExitInfo::kExited && info.exit_code == 0, "clean shutdown: " + info.Describe());
  }
  {
    RunnerClient client(GpuPolicy());
    LoadResult load;
    LoadCuda(&client, "cuda_side_stream", &load);
    TimedCallRequest t = TimedAdd(1 << 16, 7);
    TimedCallResult r;
    bool ok = client.TimedCall(t, &r, &error) && r.status == kOk;
    std::printf("  side stream: stream %.1f us, device %.1f us, host %.1f us\n",
                r.stream_event_seconds * 1e6, r.device_sync_seconds * 1e6, r.host_seconds * 1e6);
    Check(ok && r.stream_event_seconds < 0.002 && r.device_sync_seconds > 0.005 &&
              r.host_seconds > 0.005,
          "side-stream work is visible in device-wide time, not in stream events");
    Check(ok && OutputsMatchRegenerated(t, r), "side-stream outputs complete after device sync");
  }
  if (SeccompAvailable()) {
    RunnerClient client(GpuPolicy());
    LoadResult load;
    LoadCuda(&client, "cuda_fork", &load);
    CallResult res;
    client.Call(AddRequest(16, 3), &res, &error);
    ExitInfo info = client.Wait(20);
    Check(info.seccomp_violation, "fork after CUDA init is killed by seccomp: " + info.Describe());
  } else {
    std::printf("SKIP seccomp checks: this build has no libseccomp\n");
  }
  {
    RunnerClient client(GpuPolicy());
    LoadResult load;
    LoadCuda(&client, "cuda_fault", &load);
    CallResult res;
    bool ok = client.Call(AddRequest(16, 4), &res, &error);
    std::printf("  fault: status %s error '%s'\n", RunStatusName(res.status), res.error.c_str());
    ExitInfo info = client.Wait(20);
    Check(ok && res.status == kCudaError && info.kind == ExitInfo::kExited &&
              info.exit_code == kCudaErrorExitCode,
          "illegal address -> kCudaError, runner exits 3: " + info.Describe());
  }
  {
    RunnerClient client(GpuPolicy());
    LoadResult load;
    CallResult res;
    Check(LoadCuda(&client, "cuda_add", &load) && client.Call(AddRequest(1000, 5), &res, &error) &&
              res.status == kOk,
          "a fresh runner works after the fault");
  }
}

}  // namespace
}  // namespace crl::runner

int main() {
  signal(SIGPIPE, SIG_IGN);
  struct stat st;
  if (stat("/dev/nvidiactl", &st) != 0) {
    std::printf("SKIP: no NVIDIA GPU here\n");
    return 0;
  }
  crl::runner::Run();
  std::printf("%s (%d failures)\n", crl::runner::g_failures == 0 ? "ALL PASSED" : "FAILED",
              crl::runner::g_failures);
  return crl::runner::g_failures == 0 ? 0 : 1;
}
