// The seams of the worker's one evaluation pipeline. Each task format (native
// C ABI, KernelBench Python) implements three things, and EvalEngine (compile,
// verify, measure, the pair loop) is written once over them:
//
//   TaskFormatInterface  resolves the task a request names, starts sessions
//   EvalTask             a loaded task: backends, reference, trial plan,
//                        tolerances
//   SessionInterface     one side (reference or candidate) running on a lane:
//                        correctness trials, timed calls, outputs
//
// Fakes of all three live in fake_task_format.h, so the engine's decisions
// are unit-tested without processes, ports or sleeps.
#ifndef CRL_SERVICES_WORKER_FORMATS_TASK_FORMAT_H_
#define CRL_SERVICES_WORKER_FORMATS_TASK_FORMAT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "common/context.h"
#include "crl/v1/common.pb.h"
#include "lib/task/backend.h"
#include "runner/protocol.h"
#include "services/worker/lanes/runner_client.h"

namespace crl {

enum class Side { kReference, kCandidate };
// "reference" or "candidate".
const char* SideName(Side side);

// Secret seeds. Production draws from the OS CSPRNG; tests inject a fixed one.
using SeedSource = std::function<uint64_t()>;
SeedSource SecureSeedSource();

// One output as a side returned it (dtype and shape as that side declared).
struct OutputTensor {
  runner::TensorSpec spec;
  std::string data;
  // Non-empty when `data` holds a sample of the output's elements
  // (OutputSample): the output's own shape. spec.shape is then {n}.
  std::vector<int64_t> sampled_from = {};
  // `data` is one element standing for every element of `spec` (a
  // degenerate-task probe's constant, never a side's output).
  bool constant = false;
};

// Which elements of a timed call's outputs LastOutputs() returns: all of
// them, or, of an output with more than max_elements, max_elements
// positions drawn from `seed` (the same positions on both sides of a pair,
// for outputs of the same shape).
struct OutputSample {
  uint64_t seed = 0;
  int64_t max_elements = 0;  // 0: every element
};

// Most correctness trials of one evaluation, whatever a request asks.
inline constexpr int kMaxTrials = 16;

// One correctness trial: what both sides compute. Planned by the task.
struct TrialRequest {
  int index = 0;            // 0-based position in the plan
  uint64_t seed = 0;        // secret: inputs derive from it
  size_t size_set = 0;      // native: which size set of the task
  size_t distribution = 0;  // native: which of each input's distributions
  // KernelBench: the task's torch.rand inputs drawn from a normal
  // distribution instead; skipped when the reference is not finite there.
  bool alternative = false;
  // The reference may also compute the degenerate-task probes on this trial.
  bool probe_eligible = false;
  bool probes = false;  // set by the verifier, reference side only
  // A determinism re-run of this trial (fresh buffers, same inputs).
  bool rerun = false;
  std::string label;  // "trial 2/5 (size set 0, distribution 1)"
};

// What a side returned for a trial.
struct TrialResult {
  std::vector<OutputTensor> outputs;
  // Reference with probes: trivial "solutions" (zeros, identity, ...) by name.
  std::vector<std::pair<std::string, OutputTensor>> probes;
  // Something the call did wrong besides its outputs (modified an input,
  // left a thread running): fails the trial with `violation_verdict`.
  std::string violation;
  v1::Verdict violation_verdict = v1::VERDICT_WRONG_ANSWER;
  // An output shares storage with an input.
  bool aliases_input = false;
  // The index of an output that lives in the memory the previous trial's
  // output of this side occupies (one buffer overwritten by every call);
  // -1 when none does.
  int reuses_output = -1;
  // Global framework settings the call changed ("name: a -> b").
  std::vector<std::string> global_flags;
};

struct TimedRequest {
  uint64_t seed = 0;  // inputs of the task's timed size derive from it
  bool flush_l2 = true;
  // Keep this sample's outputs for LastOutputs().
  bool keep_outputs = false;
  // Back-to-back calls in this sample, each on its own inputs (the first
  // from `seed`, the others from seeds derived from it the same way on both
  // sides). Formats that report no call_bytes are only asked for one.
  int calls = 1;
  // Time one replay of a CUDA graph of the sample's calls (captured at the
  // first such request, again when `calls` changes). Formats without graphs
  // time as launched and leave TimedResult::graph false.
  bool graph = false;
};

// Times over all the sample's calls.
struct TimedResult {
  double stream_event_seconds = 0;
  double device_sync_seconds = 0;
  double host_seconds = 0;
  // Device bytes one call holds until the sample ends: its inputs and its
  // outputs (0: not reported; the sample stays one call).
  int64_t call_bytes = 0;
  // The sample was a graph replay; when one was asked for and this is
  // false, why (empty: the format has no graphs).
  bool graph = false;
  std::string graph_error;
  // A staged call (its times are the worker's own clock around the call, the
  // side stopped before and after): the round trip is that same clock, so
  // nothing can hide outside it, and the worker's writing of the inputs
  // (page faults in the side's fresh buffers, which differ between sides)
  // is not counted as the side's. False: the engine's clock around Timed().
  bool staged = false;
};

// One input of a staged timed call (SessionInterface::Stage), as the
// reference made it: a tensor's dtype, shape and bytes, or a plain value
// (JSON text).
struct StagedInput {
  runner::TensorSpec spec;
  std::string bytes;
  std::string value;  // non-empty: not a tensor
};

// The inputs of one staged sample: one list per call, the reference's.
struct StagedSample {
  uint64_t seed = 0;
  std::vector<std::vector<StagedInput>> calls;
  // Why the sample cannot be staged (an input no worker can write from
  // outside): both sides are then timed as they time themselves.
  std::string unstaged;
  // Per call, set when its outputs were read: an output of the reference
  // shares an input's memory (a candidate's may then too).
  std::vector<bool> reference_aliases;
};

// One side of an evaluation, alive on a lane. A call that fails returns
// !ok with the verdict it means for that side's code (RUNTIME_ERROR,
// TIMEOUT, ...); the caller decides what a reference failure means (always
// INFRA_ERROR). Not thread-safe: one thread drives a session.
class SessionInterface {
 public:
  virtual ~SessionInterface() = default;
  virtual RunnerEvent Trial(const TrialRequest& request, double timeout_seconds,
                            TrialResult* result) = 0;
  virtual RunnerEvent Timed(const TimedRequest& request, double timeout_seconds,
                            TimedResult* result) = 0;
  // Staged timing (KernelBench harnesses on host lanes): before a pair's
  // timed calls, the reference makes the sample's inputs (filling *sample)
  // and the candidate takes them (reading *sample); the next Timed() of the
  // same seed then writes its inputs into the stopped process, runs the
  // calls on the worker's clock, and LastOutputs() reads the outputs from
  // the stopped process. Formats that time themselves answer false from
  // Stages() and are never asked to Stage.
  virtual bool Stages() const { return false; }
  virtual RunnerEvent Stage(const TimedRequest&, double /*timeout_seconds*/, const std::shared_ptr<StagedSample>&) {
    return {false, v1::VERDICT_INFRA_ERROR, "this side does not stage"};
  }
  // The outputs of call `call` (0-based) of the last timed sample made with
  // keep_outputs, whole or at the positions `sample` draws (a format may
  // return them whole regardless: sampled_from says which).
  virtual RunnerEvent LastOutputs(double timeout_seconds, int call, const OutputSample& sample,
                                  std::vector<OutputTensor>* outputs) = 0;
  virtual std::string device_name() const = 0;
  // The candidate compiled a kernel of its own (native: always).
  virtual bool custom_kernel() const = 0;
  // Global settings changed while loading ("name: a -> b").
  virtual std::vector<std::string> global_flags() const = 0;
  // The process ended; no further calls are possible.
  virtual bool dead() const = 0;
  // Ends the process. Idempotent.
  virtual void Close() = 0;
  // Moves the side's process onto one CPU (timing: both sides of a GPU
  // measurement share one, so neither gets a faster core). False when not
  // supported or nothing moved.
  virtual bool PinToCpu(int) { return false; }
  // Stops the side's process, with whatever it started, or lets it go on
  // (between calls only: a verification stepping aside for timing, a kept
  // pair waiting for its measurement). A frozen side that is closed is
  // killed as it is. False when not supported or the process has ended.
  virtual bool Freeze(bool) { return false; }
  // Hands the session to another request: from now on `context` (which must
  // outlive the session) cancels its calls, and its process's wall budget
  // starts again at `budget_seconds` (verified sides kept for their
  // measurement). False when the format cannot; the session is unchanged.
  virtual bool Adopt(const RequestContext&, double /*budget_seconds*/) { return false; }
};

// A source to compile (a native task's reference).
struct SourceFile {
  std::string path;
  std::string content;
};

// Request overrides of the task's tolerances (<= 0: keep the task's).
struct ToleranceOverride {
  double atol = 0;
  double rtol = 0;
};

// A loaded task of either format. Immutable; shared by concurrent requests.
class EvalTask {
 public:
  virtual ~EvalTask() = default;
  virtual const std::string& name() const = 0;
  virtual TaskFormat format() const = 0;
  // Identity of the task's content (keys the degenerate-task probe cache).
  virtual const std::string& content_id() const = 0;
  virtual bool Supports(BackendKind backend) const = 0;
  // The reference source to compile for `backend`, or nullopt when the task
  // file itself runs as the reference (KernelBench).
  virtual std::optional<SourceFile> ReferenceSource(BackendKind backend) const = 0;
  // The correctness trials for a request of `requested` trials (each format
  // raises or caps it), with seeds drawn from `seeds`.
  virtual std::vector<TrialRequest> PlanTrials(int requested, const SeedSource& seeds) const = 0;
  // The tolerance an output of `dtype` is judged with.
  virtual Tolerance ToleranceFor(int32_t dtype, const ToleranceOverride& overrides) const = 0;
  // Determinism re-runs must reproduce the candidate's first output bit for
  // bit (true), or only still match the reference (false: framework kernels
  // may differ in the last bits between runs).
  virtual bool bitwise_determinism() const = 0;
  // Extra wall time a session needs beyond its calls (start-up, imports).
  virtual double session_overhead_seconds() const = 0;
  // Bytes that must move and flops of the timed problem (0: unknown).
  virtual double task_bytes() const { return 0; }
  virtual double task_flops() const { return 0; }
};

// A side's process readied before its lane is held
// (TaskFormatInterface::Prepare), for Start() on the same lane. Opaque to
// the engine; its process ends with it when no Start() took it.
class PreparedSide {
 public:
  virtual ~PreparedSide() = default;
};

// What a session is started for.
struct SessionSpec {
  Side side = Side::kCandidate;
  // The compiled artifact: a library (native) or a build manifest
  // (KernelBench candidate); empty for a KernelBench reference.
  std::string artifact;
  double budget_seconds = 0;
  // From Prepare() on the same lane, or null; Start() takes its process
  // over instead of starting one (not owned).
  PreparedSide* prepared = nullptr;
};

// A task format. Implementations are thread-safe.
class TaskFormatInterface {
 public:
  virtual ~TaskFormatInterface() = default;
  // Loads (and caches) the task a request names: a path under the task root
  // or an inline bundle. INVALID_ARGUMENT / NOT_FOUND / FAILED_PRECONDITION
  // name what is wrong.
  virtual absl::StatusOr<std::shared_ptr<const EvalTask>> Resolve(const v1::Task& task) = 0;
  // Starts one side of `task` (loaded by this format) on `lane`. Null with
  // *event set when it could not start; cancelling `context` ends a call in
  // flight (the session then reports INFRA_ERROR and is dead).
  virtual std::unique_ptr<SessionInterface> Start(const EvalTask& task, const SessionSpec& spec,
                                                  const Lane& lane,
                                                  const RequestContext& context,
                                                  RunnerEvent* event) = 0;
  // Readies a process for a side on `lane` as far as it goes without the
  // lane: a KernelBench harness on a GPU is started and imports torch,
  // seconds of CPU that would otherwise be spent holding one of the lane's
  // verification slots. Called before the lane is waited for; null when
  // the format has nothing to ready there (the default) or the process
  // failed to come up (Start() then starts one itself and says why).
  virtual std::unique_ptr<PreparedSide> Prepare(const Lane& /*lane*/, double /*budget_seconds*/,
                                                const RequestContext& /*context*/) {
    return nullptr;
  }
  // Whether its sessions can time a sample as a CUDA-graph replay
  // (TimedRequest::graph); a format that cannot is always timed as launched.
  virtual bool graph_replay() const { return false; }
};

}  // namespace crl

#endif  // CRL_SERVICES_WORKER_FORMATS_TASK_FORMAT_H_
