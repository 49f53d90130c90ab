#include "services/worker/formats/native/native_format.h"

#include <algorithm>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/file.h"
#include "common/status.h"
#include "runner/inputs.h"
#include "services/worker/formats/task_files.h"

namespace crl {
namespace {

namespace fs = std::filesystem;

class NativeEvalTask final : public EvalTask {
 public:
  explicit NativeEvalTask(NativeTask task) : task_(std::move(task)) {
    for (const auto& [expr, out] : {std::pair{task_.bytes_expr, &bytes_},
                                    std::pair{task_.flops_expr, &flops_}}) {
      if (expr.empty()) continue;
      auto v = EvalSizeExpr(expr, task_.sizes);
      if (v.ok()) *out = static_cast<double>(*v);
    }
  }

  const NativeTask& native() const { return task_; }
  const std::string& name() const override { return task_.name; }
  TaskFormat format() const override { return TaskFormat::kNative; }
  const std::string& content_id() const override { return task_.dir; }
  bool Supports(BackendKind backend) const override { return task_.Supports(backend); }

  std::optional<SourceFile> ReferenceSource(BackendKind backend) const override {
    auto it = task_.reference.find(backend);
    if (it == task_.reference.end()) return std::nullopt;
    return SourceFile{it->second, ReadFileToString(it->second, "reference").value_or("")};
  }

  // Every (size set, distribution) pair at least once, at most kMaxTrials.
  // Trials of one size set run back to back with different data: the
  // candidate gets the previous call's buffers back, refilled, which exposes
  // results cached by address or shape.
  std::vector<TrialRequest> PlanTrials(int requested, const SeedSource& seeds) const override {
    const std::vector<SizeSet> sets = task_.AllSizeSets();
    size_t dists = 1;
    for (const auto& in : task_.inputs) dists = std::max(dists, in.distributions.size());
    const int needed = static_cast<int>(sets.size() * dists);
    const int trials = std::min(kMaxTrials, std::max(requested, needed));
    std::vector<TrialRequest> plan;
    for (int t = 0; t < trials; ++t) {
      TrialRequest trial;
      trial.index = t;
      trial.seed = seeds();
      trial.size_set = t * sets.size() / trials;
      // The first three may carry the degenerate-task probes (Trial): a
      // task that the trivial solution passes is found, and every
      // candidate of it is judged against that solution.
      trial.probe_eligible = t < 3;
      plan.push_back(trial);
    }
    for (size_t t = 0, within = 0; t < plan.size(); ++t) {
      within = (t > 0 && plan[t].size_set == plan[t - 1].size_set) ? within + 1 : 0;
      plan[t].distribution = within % dists;
      plan[t].label = absl::StrCat("trial ", t + 1, "/", plan.size(), " (size set ",
                                   plan[t].size_set, ", distribution ", plan[t].distribution, ")");
    }
    return plan;
  }

  Tolerance ToleranceFor(int32_t dtype, const ToleranceOverride& overrides) const override {
    Tolerance t = task_.ToleranceFor(dtype);
    if (overrides.atol > 0) t.atol = overrides.atol;
    if (overrides.rtol > 0) t.rtol = overrides.rtol;
    return t;
  }
  bool bitwise_determinism() const override { return true; }
  double session_overhead_seconds() const override { return 60; }
  double task_bytes() const override { return bytes_; }
  double task_flops() const override { return flops_; }

 private:
  const NativeTask task_;
  double bytes_ = 0;
  double flops_ = 0;
};

// One crl-runner process with a native library loaded.
class NativeSession final : public SessionInterface {
 public:
  // The task is copied: a session can outlive the EvalTask it was started
  // from (a kept pair's task is released when its measurement takes the
  // sides, and the format's cache may hold another load of the same task).
  NativeSession(const NativeTask& task, Side side, const Lane& lane,
                std::unique_ptr<RunnerSession> runner)
      : task_(task), side_(side), lane_(lane), runner_(std::move(runner)) {}

  absl::Status Init() {
    CRL_ASSIGN_OR_RETURN(timed_.inputs, task_.InputSpecs(task_.sizes));
    CRL_ASSIGN_OR_RETURN(timed_.outputs, task_.OutputSpecs(task_.sizes));
    timed_.scalars = task_.ScalarValues();
    // Timed calls use each input's first distribution (seeds vary per call).
    for (const auto& in : task_.inputs) timed_.distributions.push_back(in.distribution_text.front());
    return absl::OkStatus();
  }

  RunnerEvent Trial(const TrialRequest& trial, double timeout, TrialResult* result) override {
    const std::vector<SizeSet> sets = task_.AllSizeSets();
    if (trial.size_set >= sets.size()) return {false, v1::VERDICT_INFRA_ERROR, "no such size set"};
    const SizeSet& sizes = sets[trial.size_set];
    auto in_specs = task_.InputSpecs(sizes);
    auto out_specs = task_.OutputSpecs(sizes);
    if (!in_specs.ok() || !out_specs.ok()) {
      return {false, v1::VERDICT_INFRA_ERROR, "task shapes failed to evaluate"};
    }
    runner::CallRequest request;
    request.call_id = ++call_id_;
    request.inputs = *in_specs;
    request.outputs = *out_specs;
    request.scalars = task_.ScalarValues();
    for (size_t i = 0; i < task_.inputs.size(); ++i) {
      const TensorDecl& decl = task_.inputs[i];
      int64_t numel = 0;
      runner::SpecNumel(request.inputs[i], &numel);
      const auto& d = decl.distributions[trial.distribution % decl.distributions.size()];
      request.input_data.push_back(
          runner::Generate(d, decl.dtype, numel, runner::DeriveSeed(trial.seed, i)));
    }
    const bool candidate = side_ == Side::kCandidate && !trial.rerun;
    request.return_inputs = candidate;
    // Within a size set the candidate gets the previous call's buffers back,
    // refilled: new data at an old address must still give the new answer.
    request.reuse_buffers = candidate && has_last_ && last_size_set_ == trial.size_set;
    if (!trial.rerun) {
      has_last_ = true;
      last_size_set_ = trial.size_set;
    }
    runner::CallResult got;
    RunnerEvent event = runner_->Call(request, timeout, &got);
    if (!event.ok) return event;
    if (got.status != runner::kOk) {
      return {false, VerdictForResult(got.status, got.error),
              absl::StrCat(runner::RunStatusName(got.status), ": ", got.error)};
    }
    for (size_t o = 0; o < got.output_data.size() && o < request.outputs.size(); ++o) {
      result->outputs.push_back({request.outputs[o], std::move(got.output_data[o])});
    }
    if (!candidate && trial.probes && result->outputs.size() == 1) {
      // The trivial solution every native task can be asked about: zeros
      // (all-zero bytes are 0 in every dtype). The verifier adds the
      // previous trial's answer (an output independent of the inputs).
      OutputTensor zeros{result->outputs[0].spec, std::string(result->outputs[0].data.size(), '\0')};
      result->probes.push_back({"zeros", std::move(zeros)});
    }
    if (!candidate) return event;
    // Work must be finished when crl_run returns. A host candidate that
    // leaves a thread behind is finishing (or faking) work off the clock.
    // (CUDA libraries start helper threads of their own, so host only.)
    if (lane_.backend == BackendKind::kHost && got.threads_after > got.threads_before) {
      result->violation = absl::StrCat("left ", got.threads_after - got.threads_before,
                                       " thread(s) running after crl_run returned");
      result->violation_verdict = v1::VERDICT_SANDBOX_VIOLATION;
    } else if (result->outputs.size() != request.outputs.size() ||
               got.input_data_after.size() != request.inputs.size()) {
      result->violation = "wrong number of tensors";
    } else {
      for (size_t i = 0; i < request.inputs.size(); ++i) {
        if (got.input_data_after[i] != request.input_data[i]) {
          result->violation = absl::StrCat("input '", request.inputs[i].name,
                                           "' was modified by the candidate");
          break;
        }
      }
    }
    return event;
  }

  RunnerEvent Timed(const TimedRequest& request, double timeout, TimedResult* result) override {
    if (lane_.backend == BackendKind::kHost) return StagedTimed(request, timeout, result);
    timed_.call_id = ++call_id_;
    timed_.seed = request.seed;
    timed_.flush_l2 = request.flush_l2;
    timed_.return_outputs = request.keep_outputs;
    runner::TimedCallResult got;
    RunnerEvent event = runner_->TimedCall(timed_, timeout, &got);
    if (!event.ok) return event;
    if (got.status != runner::kOk) {
      return {false, VerdictForResult(got.status, got.error),
              absl::StrCat(runner::RunStatusName(got.status), ": ", got.error)};
    }
    result->stream_event_seconds = got.stream_event_seconds;
    result->device_sync_seconds = got.device_sync_seconds;
    result->host_seconds = got.host_seconds;
    if (request.keep_outputs) last_outputs_ = std::move(got.output_data);
    return event;
  }

  // Whole: a native timed call returns its outputs with its times (read
  // from the stopped runner on a host lane).
  RunnerEvent LastOutputs(double, int, const OutputSample&, std::vector<OutputTensor>* outputs) override {
    if (!last_problem_.empty()) return {false, v1::VERDICT_WRONG_ANSWER, last_problem_};
    if (last_outputs_.size() != timed_.outputs.size()) {
      return {false, v1::VERDICT_WRONG_ANSWER, "outputs missing"};
    }
    outputs->clear();
    for (size_t o = 0; o < last_outputs_.size(); ++o) {
      outputs->push_back({timed_.outputs[o], last_outputs_[o]});
    }
    return {true, v1::VERDICT_OK, ""};
  }

  // A host timed call in two steps (runner/protocol.h, staged): the runner
  // allocates and flushes; the worker writes the sample's inputs into the
  // stopped runner, starts its own clock, lets it go and sends TimedGo, and
  // stops the clock and the runner at its answer. Nothing the candidate's
  // process reports decides the time, and its outputs (when kept) and inputs
  // are read from it while it is stopped: a result finished off the clock,
  // or computed only when it is read (a page-fault handler over protected
  // pages), is not there to be read.
  RunnerEvent StagedTimed(const TimedRequest& request, double timeout, TimedResult* result) {
    runner::TimedCallRequest stage = timed_;
    stage.call_id = ++call_id_;
    stage.flush_l2 = request.flush_l2;
    stage.staged = true;
    runner::TimedCallResult staged;
    RunnerEvent event = runner_->TimedCall(stage, timeout, &staged);
    if (!event.ok) return event;
    if (staged.status != runner::kOk) {
      return {false, VerdictForResult(staged.status, staged.error),
              absl::StrCat(runner::RunStatusName(staged.status), ": ", staged.error)};
    }
    if (staged.input_addresses.size() != timed_.inputs.size() ||
        staged.output_addresses.size() != timed_.outputs.size()) {
      return {false, v1::VERDICT_SANDBOX_VIOLATION, "a staged call answered with the wrong number of buffers"};
    }
    std::vector<std::string> inputs;
    for (size_t i = 0; i < timed_.inputs.size(); ++i) {
      int64_t numel = 0;
      runner::SpecNumel(timed_.inputs[i], &numel);
      const TensorDecl& decl = task_.inputs[i];
      inputs.push_back(runner::Generate(decl.distributions.front(), decl.dtype, numel,
                                        runner::DeriveSeed(request.seed, i)));
    }
    std::vector<RunnerSession::InputWrite> writes;
    for (size_t i = 0; i < inputs.size(); ++i) {
      writes.push_back({static_cast<uint64_t>(staged.input_addresses[i]), &inputs[i],
                        absl::StrCat("input '", timed_.inputs[i].name, "'")});
    }
    runner::TimedCallResult ran;
    double seconds = 0;
    event = runner_->RunStaged(writes, [&] { return runner_->TimedGo(stage.call_id, timeout, &ran); }, &seconds);
    if (!event.ok) return event;
    if (ran.status != runner::kOk) {
      return {false, VerdictForResult(ran.status, ran.error), absl::StrCat(runner::RunStatusName(ran.status), ": ", ran.error)};
    }
    std::string error;
    result->stream_event_seconds = result->device_sync_seconds = result->host_seconds = seconds;
    result->staged = true;
    last_problem_.clear();
    last_outputs_.clear();
    if (!request.keep_outputs) return event;
    // Read now, the runner stopped: whether this sample is checked was
    // decided after it answered, and it runs nothing until its next call.
    std::vector<runner::MemoryRange> ranges;
    for (size_t o = 0; o < timed_.outputs.size(); ++o) {
      uint64_t bytes = 0;
      runner::SpecBytes(timed_.outputs[o], &bytes);
      ranges.push_back({static_cast<uint64_t>(staged.output_addresses[o]), bytes});
    }
    std::string all;
    if (!runner_->ReadMemory(ranges, &all, &error)) {
      last_problem_ = absl::StrCat("the outputs could not be read after the call (", error, ")");
      return event;
    }
    for (const auto& r : ranges) {
      last_outputs_.push_back(all.substr(0, r.length));
      all.erase(0, r.length);
    }
    for (size_t i = 0; i < inputs.size(); ++i) {
      std::string after;
      if (!runner_->ReadMemory({{static_cast<uint64_t>(staged.input_addresses[i]), inputs[i].size()}}, &after, &error) ||
          after != inputs[i]) {
        last_problem_ = absl::StrCat("input '", timed_.inputs[i].name, "' was modified by a timed call");
        break;
      }
    }
    return event;
  }

  std::string device_name() const override { return runner_->device_name(); }
  bool custom_kernel() const override { return true; }
  std::vector<std::string> global_flags() const override { return {}; }
  bool dead() const override { return runner_->dead(); }
  bool Adopt(const RequestContext& context, double budget_seconds) override {
    if (runner_->dead()) return false;
    runner_->Adopt(context, budget_seconds);
    return true;
  }
  void Close() override { runner_->Close(); }
  bool Freeze(bool frozen) override { return runner_->Freeze(frozen); }

 private:
  const NativeTask task_;
  const Side side_;
  const Lane lane_;
  std::unique_ptr<RunnerSession> runner_;
  runner::TimedCallRequest timed_;
  std::vector<std::string> last_outputs_;
  // Why the last kept timed call's outputs cannot stand (empty: they can).
  std::string last_problem_;
  uint64_t call_id_ = 0;
  bool has_last_ = false;
  size_t last_size_set_ = 0;
};

}  // namespace

std::shared_ptr<const EvalTask> MakeNativeEvalTask(NativeTask task) {
  return std::make_shared<const NativeEvalTask>(std::move(task));
}

absl::StatusOr<std::shared_ptr<const EvalTask>> NativeFormat::Resolve(const v1::Task& t) {
  if (t.path().empty() == (t.files_size() == 0)) {
    return absl::InvalidArgumentError("task: set exactly one of path or files");
  }
  std::string dir;
  if (!t.path().empty()) {
    CRL_ASSIGN_OR_RETURN(dir, ResolveTaskPath(options_.task_root, t.path()));
  } else {
    CRL_ASSIGN_OR_RETURN(dir, UnpackBundle(t, (fs::path(options_.work_dir) / "tasks").string(), options_.bundles));
  }
  std::error_code ec;
  auto mtime = fs::last_write_time(fs::path(dir) / "task.yaml", ec);
  const int64_t mtime_ns = ec ? 0 : mtime.time_since_epoch().count();
  {
    absl::MutexLock lock(&mu_);
    auto it = cache_.find(dir);
    if (it != cache_.end() && it->second.mtime_ns == mtime_ns) return it->second.task;
  }
  auto loaded = LoadNativeTask(dir);
  if (!loaded.ok()) return Annotate(loaded.status(), "task");
  std::shared_ptr<const EvalTask> task = MakeNativeEvalTask(std::move(*loaded));
  absl::MutexLock lock(&mu_);
  // Requests that loaded the same version side by side share the first.
  auto& entry = cache_[dir];
  if (entry.task && entry.mtime_ns == mtime_ns) return entry.task;
  entry = {task, mtime_ns};
  return task;
}

std::unique_ptr<SessionInterface> NativeFormat::Start(const EvalTask& task,
                                                      const SessionSpec& spec, const Lane& lane,
                                                      const RequestContext& context,
                                                      RunnerEvent* event) {
  const auto* native = dynamic_cast<const NativeEvalTask*>(&task);
  if (native == nullptr) {
    *event = {false, v1::VERDICT_INFRA_ERROR, "not a native task"};
    return nullptr;
  }
  std::unique_ptr<RunnerSession> runner = options_.warm ? options_.warm->Take(lane) : nullptr;
  if (runner) {
    runner->Adopt(context, spec.budget_seconds);
    *event = runner->LoadWarm(options_.runner, lane, spec.artifact);
    // A load the code failed is its verdict; our side failing is retried
    // below with a runner of its own.
    if (!event->ok && event->verdict != v1::VERDICT_INFRA_ERROR) return nullptr;
    if (!event->ok) runner.reset();
  }
  if (!runner) {
    runner = RunnerSession::Start(options_.runner, lane, spec.artifact, spec.budget_seconds, context, event);
  }
  if (!runner) return nullptr;
  auto session = std::make_unique<NativeSession>(native->native(), spec.side, lane, std::move(runner));
  if (absl::Status s = session->Init(); !s.ok()) {
    *event = {false, v1::VERDICT_INFRA_ERROR, absl::StrCat("task shapes: ", s.message())};
    return nullptr;
  }
  return session;
}

std::unique_ptr<NativeWarmPool> MakeNativeWarmPool(LanePool* lanes, const RunnerOptions& runner,
                                                   WarmPoolOptions options) {
  if (options.per_gpu <= 0 && options.per_host_lane <= 0) return nullptr;
  // As for KernelBench's pool (kb_format.cc): the spawn budget outlasts the
  // idle limit; an adopted runner gets its side's budget then.
  const double lifetime = absl::ToDoubleSeconds(options.max_idle) + 3600;
  auto spawn = [runner, lifetime](const Lane& lane, const RequestContext& context, std::string* error) {
    RunnerEvent event;
    auto session = RunnerSession::SpawnWarm(runner, lane, lifetime, context, &event);
    if (!session) *error = event.message;
    return session;
  };
  // The pool spawns every missing runner before it awaits the first: their
  // backends (CUDA contexts) come up side by side.
  auto warm = [timeout = runner.startup_timeout_seconds](RunnerSession* session, const Lane&, std::string* error) {
    RunnerEvent up = session->AwaitWarm(timeout);
    if (!up.ok) *error = up.message;
    return up.ok;
  };
  return std::make_unique<NativeWarmPool>(lanes, spawn, warm, std::move(options));
}

}  // namespace crl
