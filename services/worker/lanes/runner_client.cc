#include "services/worker/lanes/runner_client.h"

#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/file.h"
#include "common/logging.h"
#include "runner/clock.h"
#include "runner/wire.h"

namespace crl {
namespace {

// A host side's allocator: blocks up to 32 MiB (glibc's largest threshold)
// come from the heap, and the heap is never given back while a side lives.
constexpr char kHostMallocTunables[] =
    "GLIBC_TUNABLES=glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=17179869184";

runner::LoadRequest LoadRequestFor(const RunnerOptions& options, const Lane& lane, const std::string& library) {
  runner::LoadRequest load;
  load.library_path = library;
  load.backend = BackendName(lane.backend);
  load.device = 0;  // the only visible device
  load.l2_flush_bytes = options.l2_flush_bytes;
  return load;
}

}  // namespace

v1::Verdict VerdictForStatus(int32_t status) {
  switch (status) {
    case runner::kOk: return v1::VERDICT_OK;
    case runner::kCandidateError:
    case runner::kCudaError:
    case runner::kLoadFailed: return v1::VERDICT_RUNTIME_ERROR;
    default: return v1::VERDICT_INFRA_ERROR;  // kBadRequest: our request was wrong
  }
}

v1::Verdict VerdictForResult(int32_t status, const std::string& error) {
  if (status == runner::kCandidateError && error.find("bad_alloc") != std::string::npos) {
    return v1::VERDICT_RESOURCE_LIMIT;
  }
  return VerdictForStatus(status);
}

RunnerEvent ClassifyExit(const runner::ExitInfo& exit) {
  RunnerEvent e;
  std::string how = exit.Describe();
  if (exit.kind == runner::ExitInfo::kSetupFailed) {
    e.verdict = v1::VERDICT_INFRA_ERROR;
    e.message = absl::StrCat("sandbox setup failed: ", exit.setup_error);
  } else if (exit.kind == runner::ExitInfo::kTimedOut || exit.cpu_limit_hit) {
    e.verdict = v1::VERDICT_TIMEOUT;
    e.message = absl::StrCat("time limit: ", how);
  } else if (exit.seccomp_violation) {
    e.verdict = v1::VERDICT_SANDBOX_VIOLATION;
    e.message = absl::StrCat("forbidden system call: ", how);
  } else if (exit.file_size_limit_hit || exit.memory_limit_hint) {
    e.verdict = v1::VERDICT_RESOURCE_LIMIT;
    e.message = absl::StrCat("resource limit: ", how);
  } else {
    e.verdict = v1::VERDICT_RUNTIME_ERROR;
    e.message = absl::StrCat("runner ", how);
  }
  if (!exit.log.empty()) {
    absl::StrAppend(&e.message, "; log: ", exit.log.substr(0, 2000));
  }
  return e;
}

std::unique_ptr<RunnerSession> RunnerSession::Spawn(const RunnerOptions& options,
                                                    const Lane& lane,
                                                    const std::vector<std::string>& argv,
                                                    const std::vector<std::string>& readonly_paths,
                                                    runner::SeccompProfile seccomp,
                                                    double budget_seconds,
                                                    const RequestContext& context,
                                                    RunnerEvent* event) {
  runner::SandboxPolicy policy;
  policy.wall_timeout_seconds = budget_seconds;
  policy.cpu_seconds = static_cast<uint64_t>(budget_seconds) + 1;
  policy.isolate_namespaces = options.isolate;
  policy.tmpfs_bytes = options.tmpfs_bytes;
  policy.file_size_bytes = options.file_size_bytes;
  policy.max_log_bytes = options.max_log_bytes;
  policy.masked_paths.insert(policy.masked_paths.end(), options.hidden_paths.begin(),
                             options.hidden_paths.end());
  policy.seccomp = seccomp;
  policy.readonly_paths = readonly_paths;
  policy.env = {"PATH=/usr/bin:/bin", "HOME=/tmp", "TMPDIR=/tmp", "LANG=C", "LC_ALL=C"};
  if (lane.backend == BackendKind::kCuda) {
    policy.address_space_bytes = 0;
    // The toolkit (cuBLAS for candidates), then wherever the worker itself
    // finds the driver (e.g. /usr/local/nvidia/lib64 in GPU containers).
    const char* inherited = std::getenv("LD_LIBRARY_PATH");
    policy.env.push_back(absl::StrCat("LD_LIBRARY_PATH=", options.cuda_lib_dir,
                                      inherited && *inherited ? ":" : "",
                                      inherited ? inherited : ""));
    // Only this lane's device node is in the sandbox, and CUDA numbers the
    // visible devices from 0, whatever the node's host number.
    policy.env.push_back("CUDA_VISIBLE_DEVICES=0");
    policy.extra_device_nodes = {absl::StrCat("/dev/nvidia", lane.index), "/dev/nvidiactl",
                                 "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"};
  } else {
    policy.address_space_bytes = options.host_memory_bytes;
    // One CPU per lane: library thread pools (OpenMP, torch) size themselves
    // from this, not from the machine.
    if (options.pin_host_lanes) policy.env.push_back("OMP_NUM_THREADS=1");
    // Freed memory stays with the process: a call's outputs reuse the pages
    // of the sample before instead of faulting fresh ones in. Left to
    // glibc's defaults, whether a block of a few MB is mapped afresh or
    // reused depends on what the process allocated before, so one side pays
    // a page fault per 4 KiB where the other does not, for the same work.
    policy.env.push_back(kHostMallocTunables);
  }

  std::string error;
  std::unique_ptr<RunnerSession> session(new RunnerSession(context));
  // A child inherits the spawning thread's CPU mask: pin this thread for the
  // spawn, then restore it.
  cpu_set_t saved;
  bool pinned = false;
  if (lane.backend == BackendKind::kHost && options.pin_host_lanes &&
      sched_getaffinity(0, sizeof(saved), &saved) == 0) {
    const int cpu = LaneCpu(lane, 0, sysconf(_SC_NPROCESSORS_ONLN));
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    pinned = sched_setaffinity(0, sizeof(one), &one) == 0;
  }
  session->process_ = runner::SpawnSandboxed(policy, argv, &error);
  if (pinned) sched_setaffinity(0, sizeof(saved), &saved);
  if (!session->process_) {
    *event = {false, v1::VERDICT_INFRA_ERROR, absl::StrCat("cannot start runner: ", error)};
    return nullptr;
  }
  *event = {true, v1::VERDICT_OK, ""};
  return session;
}

std::unique_ptr<RunnerSession> RunnerSession::Start(const RunnerOptions& options,
                                                    const Lane& lane,
                                                    const std::string& library,
                                                    double budget_seconds,
                                                    const RequestContext& context,
                                                    RunnerEvent* event) {
  // crl-runner installs its own seccomp filter after backend initialisation.
  // The library's directory (an artifact of the build cache) is the only
  // part of the cache the runner sees.
  auto session = Spawn(options, lane, {options.runner_path},
                       {std::filesystem::path(library).parent_path().string()},
                       runner::SeccompProfile::kNone, budget_seconds, context, event);
  if (!session) return nullptr;
  *event = session->Load(LoadRequestFor(options, lane, library), options.startup_timeout_seconds);
  if (!event->ok) return nullptr;
  return session;
}

std::unique_ptr<RunnerSession> RunnerSession::SpawnWarm(const RunnerOptions& options, const Lane& lane,
                                                        double budget_seconds, const RequestContext& context,
                                                        RunnerEvent* event) {
  auto session = Spawn(options, lane, {options.runner_path}, {}, runner::SeccompProfile::kNone, budget_seconds,
                       context, event);
  if (!session) return nullptr;
  runner::LoadRequest warm = LoadRequestFor(options, lane, "");
  warm.warm_only = true;
  *event = session->Send(static_cast<uint32_t>(runner::LoadRequest::kType), runner::Encode(warm),
                         options.startup_timeout_seconds);
  if (!event->ok) return nullptr;
  session->warming_ = true;
  return session;
}

RunnerEvent RunnerSession::AwaitWarm(double timeout_seconds) {
  if (!warming_) return {true, v1::VERDICT_OK, ""};
  warming_ = false;
  runner::Frame frame;
  // No candidate code has run in it yet: whatever fails here is the
  // worker's (INFRA_ERROR), never a side's verdict.
  auto infra = [](RunnerEvent e) {
    if (!e.ok) e.verdict = v1::VERDICT_INFRA_ERROR;
    return e;
  };
  RunnerEvent e = Receive(static_cast<uint32_t>(runner::LoadRequest::kType), timeout_seconds, &frame);
  if (!e.ok) return infra(e);
  runner::LoadResult loaded;
  std::string error;
  if (!runner::DecodeFrame(frame, &loaded, &error)) return infra(Tampered(error));
  return infra(Loaded(loaded));
}

RunnerEvent RunnerSession::LoadWarm(const RunnerOptions& options, const Lane& lane, const std::string& library) {
  if (RunnerEvent up = AwaitWarm(options.startup_timeout_seconds); !up.ok) return up;
  runner::LoadRequest load = LoadRequestFor(options, lane, library);
  auto bytes = ReadFileToString(library, "library");
  if (!bytes.ok()) {
    Close();
    return {false, v1::VERDICT_INFRA_ERROR, std::string(bytes.status().message())};
  }
  load.library_bytes = std::move(*bytes);
  return Load(load, options.startup_timeout_seconds);
}

RunnerEvent RunnerSession::Load(const runner::LoadRequest& load, double timeout_seconds) {
  runner::LoadResult loaded;
  RunnerEvent event = Roundtrip(load, timeout_seconds, &loaded);
  if (!event.ok) return event;
  return Loaded(loaded);
}

RunnerEvent RunnerSession::Loaded(const runner::LoadResult& loaded) {
  if (!loaded.ok) {
    Close();
    return {false, v1::VERDICT_RUNTIME_ERROR, absl::StrCat("load failed: ", loaded.error)};
  }
  device_name_ = loaded.device_name;
  return {true, v1::VERDICT_OK, ""};
}

RunnerSession::~RunnerSession() { Close(); }

void RunnerSession::Adopt(const RequestContext& context, double budget_seconds) {
  context_ = &context;
  process_->RestartWallClock(budget_seconds);
}

bool RunnerSession::Alive() { return !dead_ && process_->Running(); }

int LaneCpu(const Lane& lane, int host_lanes, long cpus) {
  cpus = std::max(1L, cpus);
  if (lane.backend == BackendKind::kHost) return static_cast<int>(cpus - 1 - (lane.index % cpus));
  const long cpu = cpus - 1 - host_lanes - lane.index;
  return cpu >= 1 ? static_cast<int>(cpu) : -1;
}

bool RunnerSession::PinToCpu(int cpu) { return !dead_ && process_->PinTo(cpu); }

bool RunnerSession::Freeze(bool frozen) { return !dead_ && process_ && process_->Freeze(frozen); }

bool RunnerSession::FreezeAndWait() {
  if (!Freeze(true)) return false;
  return process_->WaitPayloadStopped(kStopWaitSeconds);
}

RunnerEvent RunnerSession::NotStopped() {
  return {false, v1::VERDICT_INFRA_ERROR,
          absl::StrCat("the side's threads did not all stop within ", kStopWaitSeconds,
                       " s of SIGSTOP: its memory was not read or written")};
}

bool RunnerSession::ReadMemory(const std::vector<runner::MemoryRange>& ranges, std::string* out,
                               std::string* error) {
  if (dead_ || !process_) {
    *error = "the side has ended";
    return false;
  }
  return process_->ReadPayloadMemory(ranges, out, error);
}

bool RunnerSession::WriteMemory(uint64_t address, const std::string& bytes, std::string* error) {
  if (dead_ || !process_) {
    *error = "the side has ended";
    return false;
  }
  return process_->WritePayloadMemory(address, bytes, error);
}

RunnerEvent RunnerSession::RunStaged(const std::vector<InputWrite>& inputs, const std::function<RunnerEvent()>& go,
                                     double* seconds) {
  *seconds = 0;
  if (!FreezeAndWait()) return NotStopped();
  std::string error;
  for (const InputWrite& in : inputs) {
    if (!WriteMemory(in.address, *in.bytes, &error)) {
      return {false, v1::VERDICT_SANDBOX_VIOLATION, absl::StrCat(in.name, " buffer is not writable: ", error)};
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  Freeze(false);
  RunnerEvent event = go();
  const auto t1 = std::chrono::steady_clock::now();
  const bool stopped = FreezeAndWait();
  if (!event.ok) return event;
  if (!stopped) return NotStopped();
  *seconds = std::chrono::duration<double>(t1 - t0).count();
  return event;
}

RunnerEvent RunnerSession::SendAndRead(uint32_t type, const std::string& payload,
                                       double timeout_seconds, runner::Frame* frame) {
  RunnerEvent sent = Send(type, payload, timeout_seconds);
  if (!sent.ok) return sent;
  return Receive(type, timeout_seconds, frame);
}

RunnerEvent RunnerSession::Send(uint32_t type, const std::string& payload, double timeout_seconds) {
  if (dead_) return {false, v1::VERDICT_INFRA_ERROR, "runner already ended"};
  std::string error;
  if (!runner::WriteFrame(process_->to_child(), type, payload, &error, timeout_seconds)) {
    return Fail(absl::StrCat("sending request: ", error), false);
  }
  return {true, v1::VERDICT_OK, ""};
}

RunnerEvent RunnerSession::Receive(uint32_t type, double timeout_seconds, runner::Frame* frame) {
  if (dead_) return {false, v1::VERDICT_INFRA_ERROR, "runner already ended"};
  std::string error;
  const double start = runner::MonotonicSeconds();
  RunnerEvent waited;
  if (!AwaitAnswer(timeout_seconds, &waited)) return waited;
  // Where an evaluation's time goes, request by request (--log_level debug).
  CRL_LOG(DEBUG) << "runner " << process_->pid() << ": " << runner::MessageTypeName(type) << " answered in "
                 << (runner::MonotonicSeconds() - start) * 1e3 << " ms";
  const double left = std::max(0.0, timeout_seconds - (runner::MonotonicSeconds() - start));
  runner::ReadStatus st = runner::ReadFrame(process_->from_child(), frame, &error, left);
  if (st == runner::ReadStatus::kTimeout) {
    return Fail(absl::StrCat("no answer within ", timeout_seconds, " s"), true);
  }
  if (st == runner::ReadStatus::kEof) return Fail("runner ended", false);
  if (st != runner::ReadStatus::kOk) {
    // A runner that is still alive after writing a broken frame wrote it on
    // purpose (candidate code owns the process): tampering. One that died
    // mid-frame is classified by how it died.
    if (process_->Wait(0.5).kind == runner::ExitInfo::kTimedOut) return Tampered(error);
    dead_ = true;
    RunnerEvent e = ClassifyExit(process_->Wait(0));
    e.message = absl::StrCat(error, ": ", e.message);
    return e;
  }
  return {true, v1::VERDICT_OK, ""};
}

bool RunnerSession::AwaitAnswer(double timeout_seconds, RunnerEvent* event) {
  // Polled in short slices so a cancelled request frees its lane promptly.
  constexpr double kSlice = 0.25;
  const double deadline = runner::MonotonicSeconds() + timeout_seconds;
  while (true) {
    if (!context_->Check().ok()) {
      Fail("", true);
      *event = {false, v1::VERDICT_INFRA_ERROR,
                absl::StrCat("runner stopped: ", context_->Check().message())};
      return false;
    }
    const double left = deadline - runner::MonotonicSeconds();
    if (left <= 0) {
      *event = Fail(absl::StrCat("no answer within ", timeout_seconds, " s"), true);
      return false;
    }
    struct pollfd p = {process_->from_child(), POLLIN, 0};
    int ms = static_cast<int>(std::min(left, kSlice) * 1000) + 1;
    if (poll(&p, 1, ms) > 0) return true;  // data, EOF or an error: ReadFrame tells
  }
}

// Only the candidate's code can have written a malformed result (the
// runner's own encoder is exact): tampering with the result channel.
RunnerEvent RunnerSession::Tampered(const std::string& error) {
  Fail("", false);
  return {false, v1::VERDICT_SANDBOX_VIOLATION,
          absl::StrCat("malformed result on the runner channel: ", error)};
}

template <typename Req, typename Res>
RunnerEvent RunnerSession::Roundtrip(const Req& request, double timeout_seconds, Res* result) {
  runner::Frame frame;
  RunnerEvent e = SendAndRead(static_cast<uint32_t>(Req::kType), runner::Encode(request),
                              timeout_seconds, &frame);
  if (!e.ok) return e;
  std::string error;
  if (!runner::DecodeFrame(frame, result, &error)) return Tampered(error);
  return e;
}

RunnerEvent RunnerSession::Exchange(uint32_t type, const std::string& payload, uint32_t expect,
                                    double timeout_seconds, std::string* reply) {
  RunnerEvent sent = Request(type, payload, timeout_seconds);
  if (!sent.ok) return sent;
  return Reply(type, expect, timeout_seconds, reply);
}

RunnerEvent RunnerSession::Request(uint32_t type, const std::string& payload, double timeout_seconds) {
  return Send(type, payload, timeout_seconds);
}

RunnerEvent RunnerSession::Reply(uint32_t type, uint32_t expect, double timeout_seconds, std::string* reply) {
  runner::Frame frame;
  RunnerEvent e = Receive(type, timeout_seconds, &frame);
  if (!e.ok) return e;
  if (frame.type != expect) {
    return Tampered(absl::StrCat("expected ", runner::MessageTypeName(expect),
                                 ", got frame type ", frame.type));
  }
  *reply = std::move(frame.payload);
  return e;
}

RunnerEvent RunnerSession::Call(const runner::CallRequest& request, double timeout_seconds,
                                runner::CallResult* result) {
  RunnerEvent e = Roundtrip(request, timeout_seconds, result);
  if (e.ok && result->status == runner::kCudaError) dead_ = true;  // it exits by itself
  return e;
}

RunnerEvent RunnerSession::TimedCall(const runner::TimedCallRequest& request,
                                     double timeout_seconds, runner::TimedCallResult* result) {
  RunnerEvent e = Roundtrip(request, timeout_seconds, result);
  if (e.ok && result->status == runner::kCudaError) dead_ = true;
  return e;
}

RunnerEvent RunnerSession::TimedGo(uint64_t call_id, double timeout_seconds, runner::TimedCallResult* result) {
  runner::TimedGo go;
  go.call_id = call_id;
  return Roundtrip(go, timeout_seconds, result);
}

RunnerEvent RunnerSession::Fail(const std::string& what, bool timed_out) {
  dead_ = true;
  runner::ExitInfo exit;
  if (timed_out) {
    exit = process_->Kill();
    RunnerEvent e{false, v1::VERDICT_TIMEOUT, absl::StrCat("call timed out: ", what)};
    return e;
  }
  // The runner closed its end: give it a moment to finish dying, then reap.
  exit = process_->Wait(2.0);
  RunnerEvent e = ClassifyExit(exit);
  if (!what.empty()) e.message = absl::StrCat(what, ": ", e.message);
  return e;
}

void RunnerSession::Close() {
  if (!process_) return;
  if (!dead_ && !process_->frozen() && !kill_on_close_) {
    std::string error;
    runner::WriteMessage(process_->to_child(), runner::Shutdown{}, &error, 1.0);
    process_->CloseToChild();
    process_->Wait(2.0);
  }
  process_->Kill();
  process_.reset();
  dead_ = true;
}

}  // namespace crl
