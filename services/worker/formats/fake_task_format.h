// Fakes of the worker pipeline's seams for unit tests of EvalEngine and the
// verifier: a compiler, a task format, tasks and sessions, all in memory. No
// processes, no ports; timed calls advance a FakeClock instead of taking
// time.
//
// A candidate's source names its behaviour ("correct", "wrong", "crash",
// "hang", ...; see FakeSession); FakeCompiler turns it into the artifact
// "fake:<source>", which FakeTaskFormat::Start reads back.
#ifndef CRL_SERVICES_WORKER_FORMATS_FAKE_TASK_FORMAT_H_
#define CRL_SERVICES_WORKER_FORMATS_FAKE_TASK_FORMAT_H_

#include <atomic>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/clock.h"
#include "common/hash.h"
#include "crl/kernel.h"
#include "runner/dtype.h"
#include "runner/inputs.h"
#include "services/worker/compile/compiler.h"
#include "services/worker/formats/task_format.h"

namespace crl {

// Compiles every source to "fake:<source>", except sources containing
// "compile_error" (VERDICT_COMPILE_ERROR). `failure`, when set, is returned
// for every job (an infrastructure failure of the compile tier).
class FakeCompiler final : public CompilerInterface {
 public:
  absl::StatusOr<CompileOutcome> Compile(const CompileJob& job,
                                         const RequestContext& context) override {
    if (absl::Status live = context.Check(); !live.ok()) return live;
    absl::MutexLock lock(&mu_);
    ++compiles_;
    if (!failure_.ok()) return failure_;
    CompileOutcome out;
    out.artifact_id = Sha256Hex(absl::StrCat(TaskFormatName(job.format), job.source));
    if (absl::StrContains(job.source, "compile_error")) {
      out.verdict = v1::VERDICT_COMPILE_ERROR;
      out.log = "fake: error: expected ';'";
      return out;
    }
    out.verdict = v1::VERDICT_OK;
    out.library_path = "fake:" + job.source;
    artifacts_[out.artifact_id] = out.library_path;
    return out;
  }
  absl::StatusOr<std::string> LibraryFor(const std::string& artifact_id) override {
    absl::MutexLock lock(&mu_);
    auto it = artifacts_.find(artifact_id);
    if (it == artifacts_.end()) return absl::NotFoundError("fake: no such artifact");
    return it->second;
  }
  std::string Toolchain(BackendKind backend) const override {
    return backend == BackendKind::kHost ? "fake g++" : "";
  }

  void set_failure(absl::Status failure) {
    absl::MutexLock lock(&mu_);
    failure_ = std::move(failure);
  }
  int compiles() const {
    absl::MutexLock lock(&mu_);
    return compiles_;
  }

 private:
  mutable absl::Mutex mu_;
  absl::Status failure_ ABSL_GUARDED_BY(mu_);
  int compiles_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, std::string> artifacts_ ABSL_GUARDED_BY(mu_);
};

// How the fake task behaves.
struct FakeTaskSpec {
  // A reference source to compile (native-like) or none (KernelBench-like).
  bool compiled_reference = true;
  bool bitwise_determinism = true;
  // The reference's behaviour: "correct", "crash" (every call fails),
  // "constant" (the same output whatever the inputs: a degenerate task,
  // passed by its "zeros" probe) or "tiny" (outputs that depend on the
  // inputs but lie within the tolerance of zero: degenerate at the
  // tolerance, not in fact).
  std::string reference = "correct";
  // Trials are eligible for degenerate-task probes.
  bool probes = false;
  // Device seconds of one reference call.
  double reference_seconds = 2e-3;
  // The task runs on cuda lanes too (the fake sessions do not care which).
  bool cuda = false;
  // The last trial draws from the alternative distribution, where the
  // reference's output is NaN (the verifier skips such a trial).
  bool nonfinite_alternative = false;
};

class FakeEvalTask final : public EvalTask {
 public:
  FakeEvalTask(std::string name, FakeTaskSpec spec) : name_(std::move(name)), spec_(spec) {}
  const FakeTaskSpec& spec() const { return spec_; }
  const std::string& name() const override { return name_; }
  TaskFormat format() const override { return TaskFormat::kNative; }
  const std::string& content_id() const override { return name_; }
  bool Supports(BackendKind backend) const override {
    return backend == BackendKind::kHost || (spec_.cuda && backend == BackendKind::kCuda);
  }
  std::optional<SourceFile> ReferenceSource(BackendKind) const override {
    if (!spec_.compiled_reference) return std::nullopt;
    return SourceFile{"reference.cc", "reference"};
  }
  std::vector<TrialRequest> PlanTrials(int requested, const SeedSource& seeds) const override {
    std::vector<TrialRequest> plan;
    for (int t = 0; t < std::clamp(requested, 1, kMaxTrials); ++t) {
      TrialRequest trial;
      trial.index = t;
      trial.seed = seeds();
      trial.probe_eligible = spec_.probes && t < 3;
      trial.alternative = spec_.nonfinite_alternative && t == std::clamp(requested, 1, kMaxTrials) - 1;
      trial.label = absl::StrCat("trial ", t + 1);
      plan.push_back(trial);
    }
    return plan;
  }
  Tolerance ToleranceFor(int32_t, const ToleranceOverride& o) const override {
    return {o.atol > 0 ? o.atol : 1e-4, o.rtol > 0 ? o.rtol : 1e-4};
  }
  bool bitwise_determinism() const override { return spec_.bitwise_determinism; }
  double session_overhead_seconds() const override { return 1; }

 private:
  const std::string name_;
  const FakeTaskSpec spec_;
};

// Holds the fakes that pass it while held, at most 10 s each (tests of
// what waits for a side's end or call; code that waits for it inline fails
// them, not hangs).
class CloseGate {
 public:
  void Hold() {
    absl::MutexLock lock(&mu_);
    held_ = true;
  }
  void Open() {
    absl::MutexLock lock(&mu_);
    held_ = false;
  }
  void Pass() {
    absl::MutexLock lock(&mu_);
    auto open = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !held_; };
    mu_.AwaitWithTimeout(absl::Condition(&open), absl::Seconds(10));
  }

 private:
  absl::Mutex mu_;
  bool held_ ABSL_GUARDED_BY(mu_) = false;
};

// What the sides of one FakeTaskFormat share.
struct FakeCounters {
  std::atomic<int> open{0};    // sides alive
  std::atomic<int> probes{0};  // reference calls that computed probes
  std::atomic<int> frozen{0};  // sides frozen now (SessionInterface::Freeze)
  // The most sides alive and not frozen while a timed call ran (2 when
  // timing had the lane alone, as it must).
  std::atomic<int> most_live_while_timed{0};
  // Calls made to frozen sides (none may be).
  std::atomic<int> frozen_calls{0};
  // LastOutputs() calls that returned a sample of an output.
  std::atomic<int> sampled_fetches{0};
  CloseGate gate;        // sides ending pass it
  CloseGate trial_gate;  // "gated" candidates' trials pass it
};

// One side. The candidate's behaviour is the first word of its source:
//   correct, fast (correct, half the reference's time), wrong (off by one),
//   crash (RUNTIME_ERROR), violate (modifies an input), alias (an output
//   shares an input's storage), flags (changes a global setting), framework
//   (no kernel of its own), racy (re-runs differ in the last bit), stale
//   (timed outputs are the previous call's), hang (blocks until the request
//   ends), nostart (fails to start), gated (correct; each trial waits at
//   FakeTaskFormat::trial_gate()).
class FakeSession final : public SessionInterface {
 public:
  FakeSession(const FakeEvalTask& task, Side side, std::string behaviour, FakeClock* clock,
              const RequestContext& context, FakeCounters* counters)
      : task_(task),
        side_(side),
        behaviour_(std::move(behaviour)),
        clock_(clock),
        context_(&context),
        counters_(counters) {
    ++counters_->open;
  }
  ~FakeSession() override { Close(); }

  // The reference's output for inputs from `seed`.
  static std::vector<OutputTensor> Expected(const FakeEvalTask& task, uint64_t seed) {
    OutputTensor out;
    out.spec = {"y", CRL_FLOAT32, {4}};
    std::vector<float> v(4);
    const std::string& kind = task.spec().reference;
    const float base = kind == "constant" ? 0.0f
                       : kind == "tiny"   ? 1e-5f + (seed % 1000) * 1e-9f
                                          : (seed % 1000) / 10.0f;
    for (size_t i = 0; i < v.size(); ++i) {
      v[i] = kind == "constant" ? 0 : kind == "tiny" ? base + i * 1e-7f : base + i;
    }
    out.data.assign(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
    return {out};
  }

  RunnerEvent Trial(const TrialRequest& trial, double, TrialResult* result) override {
    if (RunnerEvent e = Common(); !e.ok) return e;
    result->outputs = Expected(task_, trial.seed);
    if (side_ == Side::kReference && trial.alternative && task_.spec().nonfinite_alternative) {
      const float nan = std::nanf("");
      std::memcpy(result->outputs[0].data.data(), &nan, sizeof nan);
    }
    if (side_ == Side::kReference) {
      if (trial.probes) {
        ++counters_->probes;
        OutputTensor zeros = result->outputs[0];
        zeros.data.assign(zeros.data.size(), '\0');
        result->probes.push_back({"zeros", zeros});
      }
      return Ok();
    }
    if (Is("gated")) counters_->trial_gate.Pass();
    if (Is("wrong")) Bump(&result->outputs[0], 1.0f);
    if (Is("racy") && trial.rerun) Bump(&result->outputs[0], 1e-6f);
    // "zeros": the trivial solution; "sloppy": every element off by 1e-5
    // (within the tolerance).
    if (Is("zeros")) result->outputs[0].data.assign(result->outputs[0].data.size(), '\0');
    if (Is("sloppy")) {
      for (size_t at = 0; at + sizeof(float) <= result->outputs[0].data.size(); at += sizeof(float)) {
        float v;
        std::memcpy(&v, result->outputs[0].data.data() + at, sizeof v);
        v += 1e-5f;
        std::memcpy(result->outputs[0].data.data() + at, &v, sizeof v);
      }
    }
    if (Is("violate")) result->violation = "input 'x' was modified by the candidate";
    if (Is("alias")) result->aliases_input = true;
    if (Is("reuse") && trials_ > 0) result->reuses_output = 0;  // the first call's buffer, again
    ++trials_;
    if (Is("flags")) result->global_flags = {"cudnn.benchmark: False -> True"};
    return Ok();
  }

  RunnerEvent Timed(const TimedRequest& request, double, TimedResult* result) override {
    if (RunnerEvent e = Common(); !e.ok) return e;
    const int live = counters_->open.load() - counters_->frozen.load();
    int most = counters_->most_live_while_timed.load();
    while (live > most && !counters_->most_live_while_timed.compare_exchange_weak(most, live)) {
    }
    double seconds = task_.spec().reference_seconds;
    if (side_ == Side::kCandidate && Is("fast")) seconds /= 2;
    if (clock_) clock_->Advance(absl::Seconds(seconds));
    result->stream_event_seconds = result->device_sync_seconds = result->host_seconds = seconds;
    // "nograph": this side's calls cannot be captured.
    result->graph = request.graph && !Is("nograph");
    if (request.graph && !result->graph) result->graph_error = "capture failed: fake";
    if (request.keep_outputs) {
      const bool stale = side_ == Side::kCandidate && Is("stale");
      last_ = Expected(task_, stale ? previous_seed_ : request.seed);
    }
    previous_seed_ = request.seed;
    return Ok();
  }

  // Sampled as the KernelBench harness samples: positions drawn from the
  // seed (the same on both sides), the full shape in sampled_from.
  RunnerEvent LastOutputs(double, int, const OutputSample& sample, std::vector<OutputTensor>* outputs) override {
    *outputs = last_;
    bool sampled = false;
    for (OutputTensor& o : *outputs) {
      int64_t n = 0;
      runner::SpecNumel(o.spec, &n);
      if (sample.max_elements <= 0 || n <= sample.max_elements) continue;
      const size_t width = runner::DtypeSize(o.spec.dtype);
      std::string picked;
      uint64_t state = sample.seed;
      for (int64_t k = 0; k < sample.max_elements; ++k) {
        const uint64_t at = runner::SplitMix64(&state) % static_cast<uint64_t>(n);
        picked.append(o.data, at * width, width);
      }
      o.sampled_from = o.spec.shape;
      o.spec.shape = {sample.max_elements};
      o.data = std::move(picked);
      sampled = true;
    }
    if (sampled) ++counters_->sampled_fetches;
    return Ok();
  }
  std::string device_name() const override { return "fake device"; }
  bool custom_kernel() const override { return !(side_ == Side::kCandidate && Is("framework")); }
  std::vector<std::string> global_flags() const override { return {}; }
  bool dead() const override { return dead_ || closed_; }
  void Close() override {
    if (closed_) return;
    if (frozen_) {
      --counters_->frozen;  // killed as it is
    } else {
      counters_->gate.Pass();
    }
    closed_ = true;
    --counters_->open;
  }
  bool Freeze(bool frozen) override {
    if (dead() || frozen == frozen_) return false;
    frozen_ = frozen;
    counters_->frozen += frozen ? 1 : -1;
    return true;
  }
  bool Adopt(const RequestContext& context, double) override {
    if (dead()) return false;
    context_ = &context;
    return true;
  }

 private:
  bool Is(const char* word) const { return absl::StartsWith(behaviour_, word); }
  static RunnerEvent Ok() { return {true, v1::VERDICT_OK, ""}; }
  static void Bump(OutputTensor* t, float by) {
    float first;
    std::memcpy(&first, t->data.data(), sizeof(float));
    first += by;
    std::memcpy(t->data.data(), &first, sizeof(float));
  }
  RunnerEvent Common() {
    if (dead_) return {false, v1::VERDICT_INFRA_ERROR, "fake: session already ended"};
    if (frozen_) {
      ++counters_->frozen_calls;
      return {false, v1::VERDICT_INFRA_ERROR, "fake: called while frozen"};
    }
    if (side_ == Side::kReference && task_.spec().reference == "crash") {
      return {false, v1::VERDICT_RUNTIME_ERROR, "fake: reference bug"};
    }
    if (side_ == Side::kCandidate && Is("crash")) {
      return {false, v1::VERDICT_RUNTIME_ERROR, "fake: candidate crashed"};
    }
    if (side_ == Side::kCandidate && Is("timeout")) {
      return {false, v1::VERDICT_TIMEOUT, "fake: the call exceeded its limit"};
    }
    if (side_ == Side::kCandidate && Is("hang")) {
      // Like a runner call that never answers: ends with the request.
      while (context_->Check().ok()) absl::SleepFor(absl::Milliseconds(1));
      dead_ = true;
      return {false, v1::VERDICT_INFRA_ERROR, "fake: stopped with the request"};
    }
    return Ok();
  }

  const FakeEvalTask task_;  // a copy: a session may outlive the load it was started from
  const Side side_;
  const std::string behaviour_;
  FakeClock* clock_;
  const RequestContext* context_;
  FakeCounters* counters_;
  std::vector<OutputTensor> last_;
  uint64_t previous_seed_ = 0;
  int trials_ = 0;
  bool dead_ = false;
  bool closed_ = false;
  bool frozen_ = false;
};

// A process FakeTaskFormat::Prepare readied; Start() takes it once.
struct FakeReadied final : PreparedSide {
  bool taken = false;
};

// Resolves any task path to a FakeEvalTask with the current spec.
class FakeTaskFormat final : public TaskFormatInterface {
 public:
  // Timed calls advance `clock` (may be null) by their device time.
  explicit FakeTaskFormat(FakeClock* clock) : clock_(clock) {}

  void set_spec(FakeTaskSpec spec) {
    absl::MutexLock lock(&mu_);
    spec_ = spec;
  }
  // Sessions alive now, and reference calls that computed probes.
  int open_sessions() const { return counters_.open.load(); }
  int sampled_fetches() const { return counters_.sampled_fetches.load(); }
  // While held, sides that end wait in Close() until it opens.
  CloseGate& close_gate() { return counters_.gate; }
  // While held, "gated" candidates' trials wait until it opens.
  CloseGate& trial_gate() { return counters_.trial_gate; }
  int probe_calls() const { return counters_.probes.load(); }
  // Sides frozen now; calls made to frozen sides; the most sides alive and
  // not frozen while a timed call ran.
  int frozen_sessions() const { return counters_.frozen.load(); }
  int frozen_calls() const { return counters_.frozen_calls.load(); }
  int most_live_while_timed() const { return counters_.most_live_while_timed.load(); }
  // Sides started so far, and reference sides among them.
  int starts() const { return starts_.load(); }
  int reference_starts() const { return reference_starts_.load(); }

  // Prepare() readies a side on a GPU lane, as a KernelBench harness does,
  // taking a second of `clock`; off: it readies nothing (the default).
  void set_readies(bool on) { readies_ = on; }
  // Sides readied, and sides started on a readied process.
  int readied() const { return readied_.load(); }
  int started_readied() const { return started_readied_.load(); }

  bool graph_replay() const override { return true; }

  std::unique_ptr<PreparedSide> Prepare(const Lane& lane, double, const RequestContext&) override {
    if (!readies_ || lane.backend != BackendKind::kCuda) return nullptr;
    ++readied_;
    if (clock_) clock_->Advance(absl::Seconds(1));
    return std::make_unique<FakeReadied>();
  }

  absl::StatusOr<std::shared_ptr<const EvalTask>> Resolve(const v1::Task& task) override {
    if (task.path().empty()) return absl::InvalidArgumentError("task.path: empty");
    absl::MutexLock lock(&mu_);
    return std::make_shared<const FakeEvalTask>(task.path(), spec_);
  }

  std::unique_ptr<SessionInterface> Start(const EvalTask& task, const SessionSpec& spec,
                                          const Lane&, const RequestContext& context,
                                          RunnerEvent* event) override {
    const auto& fake = static_cast<const FakeEvalTask&>(task);
    std::string behaviour = spec.side == Side::kReference ? "correct" : "";
    if (spec.side == Side::kCandidate) {
      if (!absl::StartsWith(spec.artifact, "fake:")) {
        *event = {false, v1::VERDICT_INFRA_ERROR, "fake: not a fake artifact"};
        return nullptr;
      }
      behaviour = spec.artifact.substr(5);
      if (absl::StartsWith(behaviour, "nostart")) {
        *event = {false, v1::VERDICT_RUNTIME_ERROR, "fake: load failed"};
        return nullptr;
      }
    }
    if (auto* readied = dynamic_cast<FakeReadied*>(spec.prepared)) {
      if (readied->taken) {
        *event = {false, v1::VERDICT_INFRA_ERROR, "fake: a readied process started twice"};
        return nullptr;
      }
      readied->taken = true;
      ++started_readied_;
    }
    *event = {true, v1::VERDICT_OK, ""};
    ++starts_;
    if (spec.side == Side::kReference) ++reference_starts_;
    return std::make_unique<FakeSession>(fake, spec.side, behaviour, clock_, context, &counters_);
  }

 private:
  FakeClock* clock_;
  mutable absl::Mutex mu_;
  FakeTaskSpec spec_ ABSL_GUARDED_BY(mu_);
  FakeCounters counters_;
  std::atomic<int> starts_{0};
  std::atomic<int> reference_starts_{0};
  std::atomic<bool> readies_{false};
  std::atomic<int> readied_{0};
  std::atomic<int> started_readied_{0};
};

}  // namespace crl

#endif  // CRL_SERVICES_WORKER_FORMATS_FAKE_TASK_FORMAT_H_
