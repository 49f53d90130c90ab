// The worker's side of a crl-runner process: spawns it in the sandbox, loads
// a library, makes calls with deadlines, and turns every way a runner can
// fail into a typed verdict. The runner is untrusted once a candidate library
// is loaded; this class trusts nothing it returns beyond its framing.
#ifndef CRL_SERVICES_WORKER_LANES_RUNNER_CLIENT_H_
#define CRL_SERVICES_WORKER_LANES_RUNNER_CLIENT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/context.h"
#include "crl/v1/common.pb.h"
#include "lib/task/backend.h"
#include "runner/protocol.h"
#include "runner/sandbox.h"
#include "runner/wire.h"

namespace crl {

// One exclusive execution slot: a GPU, or a CPU slot for the host backend.
struct Lane {
  BackendKind backend = BackendKind::kHost;
  // GPU ordinal (cuda) or slot number (host).
  int index = 0;
  // "host:0", "cuda:0".
  std::string name;
};

// The CPU a lane's runners are pinned to, on a machine with `cpus` CPUs and
// `host_lanes` host lanes: host lanes take the last CPUs (host:0 the very
// last), GPU lanes the ones before them; -1 for a GPU lane that would land
// on CPU 0 (the worker's own threads start there) or below.
int LaneCpu(const Lane& lane, int host_lanes, long cpus);

struct RunnerOptions {
  // The crl-runner binary.
  std::string runner_path;
  // Namespaces and the read-only filesystem view (off only for debugging).
  bool isolate = true;
  // RLIMIT_AS of host runners (CUDA runners cannot have one).
  uint64_t host_memory_bytes = 4ull << 30;
  // Private /tmp size and largest file a runner may write.
  uint64_t tmpfs_bytes = 64ull << 20;
  uint64_t file_size_bytes = 64ull << 20;
  // Time to start, initialise the backend and load the library.
  double startup_timeout_seconds = 60;
  // Bytes of runner stdout/stderr kept for messages.
  uint64_t max_log_bytes = 8 << 10;
  // Library directory of the CUDA toolkit (cuBLAS for candidates).
  std::string cuda_lib_dir = "/usr/local/cuda/lib64";
  // Host paths hidden inside the sandbox (tokens, keys).
  std::vector<std::string> hidden_paths;
  // L2 flush buffer for timed calls (0: the runner's default).
  uint64_t l2_flush_bytes = 0;
  // Pin host-lane runners to one CPU each (lane i: the i-th CPU from the
  // last), away from the worker's own threads on the first ones.
  bool pin_host_lanes = true;
};

// Outcome of one interaction with a runner.
struct RunnerEvent {
  // The request completed and its result decoded (the result's own status
  // may still say the candidate failed; see VerdictForStatus()).
  bool ok = false;
  // When !ok: RUNTIME_ERROR, TIMEOUT, RESOURCE_LIMIT, SANDBOX_VIOLATION or
  // INFRA_ERROR (the sandbox could not be set up).
  v1::Verdict verdict = v1::VERDICT_UNSPECIFIED;
  std::string message;
};

// Not thread-safe: one session is driven by one thread.
class RunnerSession {
 public:
  // Spawns a runner on `lane`, loads `library`. `budget_seconds` bounds the
  // whole session's wall time; cancelling `context` (which must outlive the
  // session) kills the runner within about a quarter of a second, and the
  // call in flight reports INFRA_ERROR. Returns null with *event set on
  // failure.
  static std::unique_ptr<RunnerSession> Start(const RunnerOptions& options, const Lane& lane,
                                              const std::string& library, double budget_seconds,
                                              const RequestContext& context, RunnerEvent* event);
  // A warm runner, in steps (warm_pool.h): SpawnWarm() starts crl-runner on
  // `lane` and asks it to bring its backend up (device context, flush
  // buffer) with no library and none of the build cache in its sandbox,
  // without waiting for that: AwaitWarm() does (several runners started
  // before the first is awaited come up in parallel). LoadWarm() later
  // loads `library` into it by sending the library's bytes. A runner takes
  // one library in its life, so it serves one side only. Null / !ok with the
  // event set on failure (a failed load is RUNTIME_ERROR, as for Start).
  static std::unique_ptr<RunnerSession> SpawnWarm(const RunnerOptions& options, const Lane& lane,
                                                  double budget_seconds, const RequestContext& context,
                                                  RunnerEvent* event);
  // Waits for SpawnWarm's backend to be up (at once when it was awaited).
  RunnerEvent AwaitWarm(double timeout_seconds);
  RunnerEvent LoadWarm(const RunnerOptions& options, const Lane& lane, const std::string& library);
  // Spawns `argv` on `lane` in the runner's sandbox without any handshake
  // (the KernelBench harness). `readonly_paths` are the host paths it needs
  // under /tmp-like locations the sandbox would hide. `seccomp` applies from
  // exec on (crl-runner installs its own later, so Start() passes kNone).
  static std::unique_ptr<RunnerSession> Spawn(const RunnerOptions& options, const Lane& lane,
                                              const std::vector<std::string>& argv,
                                              const std::vector<std::string>& readonly_paths,
                                              runner::SeccompProfile seccomp,
                                              double budget_seconds,
                                              const RequestContext& context, RunnerEvent* event);
  ~RunnerSession();

  // One raw request/response: writes a frame of `type`, reads one frame that
  // must be of `expect`. Failures are classified as for Call().
  RunnerEvent Exchange(uint32_t type, const std::string& payload, uint32_t expect,
                       double timeout_seconds, std::string* reply);
  // Exchange in two halves, so that several sessions' requests are in flight
  // at once (a warm pool bringing devices up side by side): Request writes
  // the frame, Reply reads the answer, which must be of `expect`.
  RunnerEvent Request(uint32_t type, const std::string& payload, double timeout_seconds);
  RunnerEvent Reply(uint32_t type, uint32_t expect, double timeout_seconds, std::string* reply);

  RunnerEvent Call(const runner::CallRequest& request, double timeout_seconds,
                   runner::CallResult* result);
  RunnerEvent TimedCall(const runner::TimedCallRequest& request, double timeout_seconds,
                        runner::TimedCallResult* result);
  // Runs the staged timed call (runner/protocol.h's TimedGo).
  RunnerEvent TimedGo(uint64_t call_id, double timeout_seconds, runner::TimedCallResult* result);
  // Asks the runner to exit and reaps it (kills it, after KillOnClose).
  // Idempotent.
  void Close();
  // Close() kills the process at once instead of asking it to exit: for a
  // process nobody needs to end cleanly (a KernelBench harness, which serves
  // one side and is thrown away), whose interpreter's shutdown would
  // otherwise hold its lane for a second or more.
  void KillOnClose() { kill_on_close_ = true; }
  bool kills_on_close() const { return kill_on_close_; }

  // Hands a session started ahead of its use (warm_pool.h) to a request:
  // from now on `context` (which must outlive the session) cancels its
  // calls, and its wall budget is `budget_seconds` from now.
  void Adopt(const RequestContext& context, double budget_seconds);
  // The process is still running (a non-blocking look; dead() only knows
  // what a call found out).
  bool Alive();
  // Moves every thread of the runner's process group to CPU `cpu` (threads
  // made later inherit it). Best effort: false when nothing could be moved.
  bool PinToCpu(int cpu);
  // Stops every process of the runner's group (frozen) or lets them go on
  // (SandboxedProcess::Freeze). A frozen session that is closed is killed
  // without being let go on: nothing it holds runs again.
  bool Freeze(bool frozen);
  // Freeze(true), then waits (at most kStopWaitSeconds; at once in
  // practice) until the payload's threads have all stopped: after it, none
  // of them runs until Freeze(false). False: the side ended, or a thread did
  // not stop; then nothing may be read or written as if it were stopped
  // (NotStopped()). A thread must run to take its SIGSTOP: on a loaded
  // machine, with the side pinned to a CPU other processes share, 1 s was
  // once not enough (an honest run's timing ended INFRA_ERROR in the suite).
  static constexpr double kStopWaitSeconds = 5;
  bool FreezeAndWait();
  // What a staged call answers when FreezeAndWait() failed: an
  // infrastructure error (retried), never the candidate's verdict.
  static RunnerEvent NotStopped();
  // The payload's memory from outside (runner/process_group.h), for a frozen
  // session: nothing of it runs while it is read or written.
  bool ReadMemory(const std::vector<runner::MemoryRange>& ranges, std::string* out, std::string* error);
  bool WriteMemory(uint64_t address, const std::string& bytes, std::string* error);

  // One staged timed call, the worker's clock around it: stops the side,
  // writes each input into it, starts the clock, lets the side go and runs
  // `go` (which asks for the call and reads the answer), stops the clock
  // and then the side. `*seconds` is the clock's reading. A side that will
  // not stop is NotStopped(); a buffer it gave that cannot be written is a
  // SANDBOX_VIOLATION naming it.
  struct InputWrite {
    uint64_t address = 0;
    const std::string* bytes = nullptr;
    std::string name;  // "input 'x'" in the message
  };
  RunnerEvent RunStaged(const std::vector<InputWrite>& inputs, const std::function<RunnerEvent()>& go,
                        double* seconds);

  const std::string& device_name() const { return device_name_; }
  // The runner died or was killed; no further calls are possible.
  bool dead() const { return dead_; }

 private:
  explicit RunnerSession(const RequestContext& context) : context_(&context) {}
  template <typename Req, typename Res>
  RunnerEvent Roundtrip(const Req& request, double timeout_seconds, Res* result);
  // Writes one frame, reads one; on failure the session is dead.
  RunnerEvent SendAndRead(uint32_t type, const std::string& payload, double timeout_seconds,
                          runner::Frame* frame);
  // The halves of SendAndRead; `type` (the request's) names it in the log.
  RunnerEvent Send(uint32_t type, const std::string& payload, double timeout_seconds);
  RunnerEvent Receive(uint32_t type, double timeout_seconds, runner::Frame* frame);
  // The outcome of a LoadRequest: a refusal ends the runner.
  RunnerEvent Loaded(const runner::LoadResult& loaded);
  RunnerEvent Tampered(const std::string& error);
  // Sends `load` and reads its answer; a refusal ends the runner.
  RunnerEvent Load(const runner::LoadRequest& load, double timeout_seconds);
  // Kills (or reaps) the runner and classifies how it ended.
  RunnerEvent Fail(const std::string& what, bool timed_out);

  // Waits for the runner's answer to start arriving: true when readable,
  // false (with *event set, the runner killed) when the request was
  // cancelled or `timeout_seconds` passed.
  bool AwaitAnswer(double timeout_seconds, RunnerEvent* event);

  const RequestContext* context_;
  std::unique_ptr<runner::SandboxedProcess> process_;
  std::string device_name_;
  bool dead_ = false;
  bool warming_ = false;  // SpawnWarm's request sent, its answer not yet read
  bool kill_on_close_ = false;
};

// Verdict for a runner result status (kOk -> VERDICT_OK).
v1::Verdict VerdictForStatus(int32_t status);
// As VerdictForStatus, but an allocation failure under the sandbox's memory
// limit (std::bad_alloc escaping crl_run) is RESOURCE_LIMIT.
v1::Verdict VerdictForResult(int32_t status, const std::string& error);

// Classifies how a sandboxed process ended (never VERDICT_OK).
RunnerEvent ClassifyExit(const runner::ExitInfo& exit);

}  // namespace crl

#endif  // CRL_SERVICES_WORKER_LANES_RUNNER_CLIENT_H_
