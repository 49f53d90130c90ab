#include "services/worker/formats/kernelbench/kb_format.h"

#include <algorithm>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "crl/kernel.h"
#include "lib/task/kernelbench_task.h"
#include "services/worker/formats/kernelbench/kb_staged.h"
#include "services/worker/formats/task_files.h"

namespace crl {
namespace {

namespace fs = std::filesystem;

class KbEvalTask final : public EvalTask {
 public:
  KbEvalTask(KbTask task, const KbOptions& options) : task_(std::move(task)), options_(options) {}

  const KbTask& kb() const { return task_; }
  const std::string& name() const override { return task_.name; }
  TaskFormat format() const override { return TaskFormat::kKernelBench; }
  const std::string& content_id() const override { return task_.sha256; }
  bool Supports(BackendKind) const override { return true; }
  // The task's own Model is the reference: nothing to compile.
  std::optional<SourceFile> ReferenceSource(BackendKind) const override { return std::nullopt; }

  // Between 1 and kMaxTrials trials. The last of three or more draws the task's
  // torch.rand inputs from a normal distribution instead: shortcuts that
  // exploit uniform [0, 1) inputs fail there. The first three others may
  // carry the degenerate-task probes.
  std::vector<TrialRequest> PlanTrials(int requested, const SeedSource& seeds) const override {
    const int trials = std::clamp(requested, 1, kMaxTrials);
    std::vector<TrialRequest> plan;
    for (int t = 0; t < trials; ++t) {
      TrialRequest trial;
      trial.index = t;
      trial.seed = seeds();
      trial.alternative = trials >= 3 && t == trials - 1;
      trial.probe_eligible = options_.probe_degenerate && t < 3 && !trial.alternative;
      trial.label = absl::StrCat("trial ", t + 1, trial.alternative ? " (normal inputs)" : "");
      plan.push_back(trial);
    }
    return plan;
  }

  // float32 follows the worker's (or the request's) setting; other dtypes
  // their defaults.
  Tolerance ToleranceFor(int32_t dtype, const ToleranceOverride& overrides) const override {
    if (dtype != CRL_FLOAT32) return DefaultTolerance(dtype);
    return {overrides.atol > 0 ? overrides.atol : options_.atol,
            overrides.rtol > 0 ? overrides.rtol : options_.rtol};
  }
  bool bitwise_determinism() const override { return false; }
  double session_overhead_seconds() const override { return 120; }

 private:
  const KbTask task_;
  const KbOptions& options_;
};

std::string Status(const KbReply& r) { return KbField<std::string>(r.header, "status", ""); }

std::string ErrorText(const KbReply& r) {
  return KbField<std::string>(r.header, "error", "failed").substr(0, 3000);
}

// The harness always reports three positive, finite times; anything else
// was written by candidate code.
bool PlausibleTimes(const KbReply& r) {
  for (const char* key : {"stream_event_seconds", "device_sync_seconds", "host_seconds"}) {
    double v = KbField<double>(r.header, key, -1);
    if (!(v > 0 && v < 1e6)) return false;
  }
  return true;
}

// Findings the harness reports about a candidate call (aliasing apart, which
// is judged against the reference): "" when there are none.
std::string FindingsProblem(const nlohmann::json& f) {
  auto problems = KbField<nlohmann::json>(f, "problems", nlohmann::json::array());
  if (problems.is_array() && !problems.empty()) return problems[0].dump();
  auto modified = KbField<nlohmann::json>(f, "inputs_modified", nlohmann::json::array());
  if (modified.is_array() && !modified.empty()) {
    return absl::StrCat("forward modified input(s) ", modified.dump(),
                        " (inputs must be bit-identical after the call)");
  }
  int threads = KbField<int>(f, "python_threads_after", 0);
  if (threads > 0) {
    return absl::StrCat("left ", threads, " Python thread(s) running after forward returned");
  }
  return "";
}

std::vector<OutputTensor> AsOutputs(std::vector<KbTensor> tensors) {
  std::vector<OutputTensor> out;
  for (auto& t : tensors) out.push_back({std::move(t.spec), std::move(t.data), std::move(t.sampled_from)});
  return out;
}

// One harness process: the task's Model, or the candidate's ModelNew.
class KbHarnessSession final : public SessionInterface {
 public:
  // `host`: a host lane, where timing is staged (kb_staged.h).
  KbHarnessSession(Side side, std::unique_ptr<KbSession> session, bool host)
      : side_(side), session_(std::move(session)) {
    if (host) staged_ = std::make_unique<KbStagedSide>(session_.get(), side);
  }

  bool Stages() const override { return staged_ != nullptr; }
  RunnerEvent Stage(const TimedRequest& request, double timeout,
                    const std::shared_ptr<StagedSample>& sample) override {
    return staged_ ? staged_->Stage(request, timeout, sample) : SessionInterface::Stage(request, timeout, sample);
  }

  RunnerEvent Trial(const TrialRequest& trial, double timeout, TrialResult* result) override {
    KbReply reply;
    RunnerEvent event = session_->Call({{"seed", trial.seed},
                                        {"check_inputs", true},
                                        {"probes", trial.probes},
                                        {"distribution", trial.alternative ? "normal" : "task"}},
                                       timeout, &reply);
    if (!event.ok) return event;
    if (Status(reply) != "ok") {
      return {false, v1::VERDICT_RUNTIME_ERROR, absl::StrCat("raised: ", ErrorText(reply))};
    }
    const auto findings =
        KbField<nlohmann::json>(reply.header, "findings", nlohmann::json::object());
    auto decoded = DecodeKbTensors(std::move(reply), /*allow_fill=*/side_ == Side::kReference);
    if (!decoded.ok()) return {false, v1::VERDICT_WRONG_ANSWER, std::string(decoded.status().message())};
    for (auto& tensor : *decoded) {
      if (tensor.probe.empty()) {
        result->outputs.push_back({std::move(tensor.spec), std::move(tensor.data)});
      } else {
        OutputTensor probe{std::move(tensor.spec), std::move(tensor.data)};
        probe.constant = tensor.constant;
        result->probes.push_back({tensor.probe, std::move(probe)});
      }
    }
    result->aliases_input = KbField<bool>(findings, "aliases_input", false);
    result->reuses_output = KbField<int>(findings, "reuses_output", -1);
    result->global_flags = KbField<std::vector<std::string>>(findings, "global_flags", {});
    if (side_ == Side::kCandidate) result->violation = FindingsProblem(findings);
    return event;
  }

  RunnerEvent Timed(const TimedRequest& request, double timeout, TimedResult* result) override {
    last_staged_ = staged_ && staged_->Ready(request.seed);
    if (last_staged_) return staged_->Timed(request, timeout, result);
    KbReply reply;
    RunnerEvent event = session_->Call(
        {{"timed", true},
         {"seed", request.seed},
         {"flush_l2", request.flush_l2},
         {"calls", request.calls},
         {"graph", request.graph}},
        timeout, &reply);
    if (!event.ok) return event;
    if (Status(reply) != "ok") return {false, v1::VERDICT_RUNTIME_ERROR, ErrorText(reply)};
    result->graph = KbField<bool>(reply.header, "graph", false);
    result->graph_error = KbField<std::string>(reply.header, "graph_error", "").substr(0, 500);
    // A capture that failed answers without times: the measurement starts
    // over with fresh sides, as launched.
    if (request.graph && !result->graph) return event;
    if (KbField<int>(reply.header, "python_threads_after", 0) > 0) {
      return {false, v1::VERDICT_WRONG_ANSWER,
              "a Python thread was left running after a timed forward returned"};
    }
    if (!PlausibleTimes(reply)) {
      return {false, v1::VERDICT_SANDBOX_VIOLATION, "forged timing report (not positive)"};
    }
    result->stream_event_seconds = KbField<double>(reply.header, "stream_event_seconds", 0);
    result->device_sync_seconds = KbField<double>(reply.header, "device_sync_seconds", 0);
    result->host_seconds = KbField<double>(reply.header, "host_seconds", 0);
    result->call_bytes = std::max<int64_t>(0, KbField<int64_t>(reply.header, "call_bytes", 0));
    return event;
  }

  // Fetched only after both sides of a pair returned, so a candidate cannot
  // tell a checked call from an unchecked one.
  RunnerEvent LastOutputs(double timeout, int call, const OutputSample& sample,
                          std::vector<OutputTensor>* outputs) override {
    if (last_staged_) return staged_->LastOutputs(call, sample, outputs);
    session_->Freeze(false);  // the harness hands them over itself
    KbReply reply;
    RunnerEvent event = session_->Fetch(call, sample, timeout, &reply);
    if (!event.ok) return event;
    auto decoded = DecodeKbTensors(std::move(reply));
    if (!decoded.ok()) return {false, v1::VERDICT_WRONG_ANSWER, std::string(decoded.status().message())};
    *outputs = AsOutputs(std::move(*decoded));
    return event;
  }

  std::string device_name() const override { return session_->device_name(); }
  bool custom_kernel() const override { return session_->custom_kernel(); }
  std::vector<std::string> global_flags() const override { return session_->global_flags(); }
  bool dead() const override { return session_->dead(); }
  void Close() override { session_->Close(); }
  bool PinToCpu(int cpu) override { return session_->PinToCpu(cpu); }
  bool Freeze(bool frozen) override { return session_->Freeze(frozen); }
  bool Adopt(const RequestContext& context, double budget_seconds) override {
    if (session_->dead()) return false;
    session_->Adopt(context, budget_seconds);
    return true;
  }

 private:
  const Side side_;
  std::unique_ptr<KbSession> session_;
  std::unique_ptr<KbStagedSide> staged_;  // host lanes
  bool last_staged_ = false;              // the last Timed() was staged
};

// A harness readied before its lane was held (KbFormat::Prepare).
struct KbPreparedSide final : PreparedSide {
  explicit KbPreparedSide(std::unique_ptr<RunnerSession> p) : process(std::move(p)) {}
  std::unique_ptr<RunnerSession> process;
};

}  // namespace

std::unique_ptr<KbWarmPool> MakeKbWarmPool(LanePool* lanes, const RunnerOptions& runner, const KbOptions& kb,
                                           WarmPoolOptions options) {
  if (options.per_gpu <= 0 && options.per_host_lane <= 0) return nullptr;
  // Idle processes are dropped after max_idle; an adopted one gets its
  // session's budget then (RunnerSession::Adopt). The spawn budget only has
  // to outlast both, and bounds its CPU seconds.
  const double lifetime = absl::ToDoubleSeconds(options.max_idle) + 3600;
  auto spawn = [runner, kb, lifetime](const Lane& lane, const RequestContext& context, std::string* error) {
    RunnerEvent event;
    auto session = SpawnKbHarness(runner, kb, lane, lifetime, context, &event);
    if (!session) *error = event.message;
    return session;
  };
  // On a GPU the interpreter's import (seconds of CPU) is waited for off the
  // lane; only the CUDA contexts come up under the start lease, side by side.
  KbWarmPool::Steps steps;
  steps.spawn = spawn;
  steps.prepare = [runner](RunnerSession* session, std::string* error) {
    return ReadyKbHarness(session, runner, error);
  };
  steps.begin = [runner](RunnerSession* session, const Lane& lane, std::string* error) {
    return BeginWarmKbHarness(session, runner, lane, error);
  };
  steps.warm = [runner](RunnerSession* session, const Lane&, std::string* error) {
    return AwaitWarmKbHarness(session, runner, error);
  };
  return std::make_unique<KbWarmPool>(lanes, std::move(steps), std::move(options));
}

std::unique_ptr<PreparedSide> KbFormat::Prepare(const Lane& lane, double budget_seconds,
                                                const RequestContext& context) {
  if (lane.backend != BackendKind::kCuda) return nullptr;
  std::unique_ptr<RunnerSession> process = options_.warm ? options_.warm->Take(lane) : nullptr;
  if (!process) {
    // Its budget starts again when a session adopts it (KbSession::Start).
    RunnerEvent event;
    process = SpawnKbHarness(options_.runner, options_.kb, lane, budget_seconds, context, &event);
    std::string error;
    if (!process || !ReadyKbHarness(process.get(), options_.runner, &error)) return nullptr;
  }
  return std::make_unique<KbPreparedSide>(std::move(process));
}

absl::StatusOr<std::shared_ptr<const EvalTask>> KbFormat::Resolve(const v1::Task& t) {
  if (t.path().empty() == (t.files_size() == 0)) {
    return absl::InvalidArgumentError("task: set exactly one of path or files");
  }
  std::string path;
  if (!t.path().empty()) {
    CRL_ASSIGN_OR_RETURN(path, ResolveTaskPath(options_.task_root, t.path()));
    if (fs::path(path).extension() != ".py") {
      return absl::InvalidArgumentError(
          absl::StrCat("task.path: '", t.path(), "' is not a KernelBench .py file"));
    }
  } else {
    if (t.files_size() != 1) {
      return absl::InvalidArgumentError("task.files: a KernelBench task is exactly one .py file");
    }
    CRL_ASSIGN_OR_RETURN(std::string dir,
                         UnpackBundle(t, (fs::path(options_.work_dir) / "kb-tasks").string(), options_.bundles));
    path = (fs::path(dir) / t.files(0).path()).string();
  }
  auto loaded = LoadKbTask(path);
  if (!loaded.ok()) return Annotate(loaded.status(), "task");
  if (!t.name().empty()) loaded->name = t.name();
  return std::make_shared<const KbEvalTask>(std::move(*loaded), options_.kb);
}

std::unique_ptr<SessionInterface> KbFormat::Start(const EvalTask& task, const SessionSpec& spec,
                                                  const Lane& lane, const RequestContext& context,
                                                  RunnerEvent* event) {
  const auto* kb = dynamic_cast<const KbEvalTask*>(&task);
  if (kb == nullptr) {
    *event = {false, v1::VERDICT_INFRA_ERROR, "not a KernelBench task"};
    return nullptr;
  }
  KbLoad load{"reference", kb->kb().path, "", ""};
  if (spec.side == Side::kCandidate) {
    // The build's manifest sits beside the candidate source it imported.
    load = {"candidate", kb->kb().path,
            (fs::path(spec.artifact).parent_path() / "candidate.py").string(), spec.artifact};
  }
  std::unique_ptr<RunnerSession> ready;
  if (auto* prepared = dynamic_cast<KbPreparedSide*>(spec.prepared)) ready = std::move(prepared->process);
  if (ready && !ready->Alive()) ready.reset();  // ended while its request waited for the lane
  if (!ready && options_.warm) ready = options_.warm->Take(lane);
  auto session = KbSession::Start(options_.runner, options_.kb, lane, load, spec.budget_seconds,
                                  context, event, std::move(ready));
  if (!session) return nullptr;
  return std::make_unique<KbHarnessSession>(spec.side, std::move(session), lane.backend == BackendKind::kHost);
}

}  // namespace crl
