#include "services/worker/eval_engine.h"

#include <algorithm>
#include <optional>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/status.h"
#include "lib/reward/names.h"
#include "services/worker/engine_parts.h"

namespace crl {
namespace {

std::string KillReason(v1::Verdict v) {
  switch (v) {
    case v1::VERDICT_TIMEOUT: return "timeout";
    case v1::VERDICT_SANDBOX_VIOLATION: return "seccomp";
    case v1::VERDICT_RESOURCE_LIMIT: return "resource_limit";
    case v1::VERDICT_RUNTIME_ERROR: return "crash";
    default: return "";
  }
}

// Whether a verification's outcome could come from sharing its GPU with
// another one (slower calls, less device memory) rather than from the code.
bool ContentionCouldCause(const v1::EvaluateResponse& r) {
  switch (r.verdict()) {
    case v1::VERDICT_TIMEOUT:
    case v1::VERDICT_RESOURCE_LIMIT:
    case v1::VERDICT_INFRA_ERROR:
      return true;
    case v1::VERDICT_RUNTIME_ERROR:
      for (const auto& m : r.messages()) {
        if (absl::StrContains(absl::AsciiStrToLower(m), "out of memory")) return true;
      }
      return false;
    default:
      return false;
  }
}

}  // namespace

EvalEngine::EvalEngine(EngineOptions options, CompilerInterface* compiler, LanePool* lanes,
                       TaskFormats formats, WorkerMetrics* metrics, ClockInterface* clock,
                       SeedSource seeds)
    : options_(std::move(options)),
      compiler_(compiler),
      lanes_(lanes),
      formats_(formats),
      metrics_(metrics),
      clock_(clock),
      seeds_(std::move(seeds)),
      compile_slots_(options_.compile_slots > 0
                         ? options_.compile_slots
                         : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))),
      reference_cache_(options_.reference_cache, clock_) {
  reaper_ = std::thread([this] {
    auto stop = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; };
    while (true) {
      {
        absl::MutexLock lock(&mu_);
        if (mu_.AwaitWithTimeout(absl::Condition(&stop), absl::Milliseconds(100))) return;
      }
      DropExpiredKept();
    }
  });
}

EvalEngine::~EvalEngine() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  reaper_.join();
  WaitRetired();
  std::map<std::string, std::unique_ptr<KeptPair>> kept;
  {
    absl::MutexLock lock(&mu_);
    kept.swap(kept_);
  }
}

void EvalEngine::Retire(std::shared_ptr<const EvalTask> task, LaneLease lease,
                        std::unique_ptr<SessionInterface> candidate, std::unique_ptr<SessionInterface> reference) {
  // Held as a kept pair is, and ended as one: sides first, then the lease
  // (counted busy until then).
  auto sides = std::make_shared<std::unique_ptr<KeptPair>>(std::make_unique<KeptPair>(std::move(lease), metrics_));
  (*sides)->task = std::move(task);
  (*sides)->candidate = std::move(candidate);
  (*sides)->reference = std::move(reference);
  {
    absl::MutexLock lock(&mu_);
    ++retiring_;
  }
  auto end = [this, sides] {
    sides->reset();
    absl::MutexLock lock(&mu_);
    --retiring_;
  };
  if (!enders_.Submit(end).ok()) end();  // every ender busy and the queue full: here
}

void EvalEngine::WaitRetired() {
  absl::MutexLock lock(&mu_);
  auto none = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return retiring_ == 0; };
  mu_.Await(absl::Condition(&none));
}

absl::Status EvalEngine::AcquireCompileSlot(const RequestContext& context) {
  auto free_slot = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return compiles_running_ < compile_slots_;
  };
  absl::MutexLock lock(&mu_);
  while (!free_slot()) {
    CRL_RETURN_IF_ERROR(context.Check());
    mu_.AwaitWithTimeout(absl::Condition(&free_slot), absl::Milliseconds(100));
  }
  ++compiles_running_;
  return absl::OkStatus();
}

void EvalEngine::ReleaseCompileSlot() {
  absl::MutexLock lock(&mu_);
  --compiles_running_;
}

absl::StatusOr<EvalEngine::Resolved> EvalEngine::Resolve(const v1::Task& task,
                                                         v1::Backend requested) const {
  Resolved r;
  switch (task.format()) {
    case v1::TASK_FORMAT_UNSPECIFIED:
    case v1::TASK_FORMAT_NATIVE: r.format = formats_.native; break;
    case v1::TASK_FORMAT_KERNELBENCH: r.format = formats_.kernelbench; break;
    default: return absl::InvalidArgumentError("task.format: unknown value");
  }
  CRL_ASSIGN_OR_RETURN(r.task, r.format->Resolve(task));
  switch (requested) {
    case v1::BACKEND_UNSPECIFIED:
      r.backend = lanes_->Has(BackendKind::kCuda) && r.task->Supports(BackendKind::kCuda)
                      ? BackendKind::kCuda
                      : BackendKind::kHost;
      break;
    case v1::BACKEND_HOST: r.backend = BackendKind::kHost; break;
    case v1::BACKEND_CUDA: r.backend = BackendKind::kCuda; break;
    default: return absl::InvalidArgumentError("backend: unknown value");
  }
  if (!r.task->Supports(r.backend)) {
    return absl::InvalidArgumentError(absl::StrCat("backend: task '", r.task->name(), "' has no ",
                                                   BackendName(r.backend), " reference"));
  }
  if (!lanes_->Has(r.backend)) {
    return absl::FailedPreconditionError(
        absl::StrCat("backend: this worker has no ", BackendName(r.backend), " lane"));
  }
  return r;
}

absl::StatusOr<CompileOutcome> EvalEngine::CompileSource(TaskFormat format, BackendKind backend,
                                                         const std::string& source,
                                                         const std::string& filename,
                                                         const v1::CompileLimits& limits,
                                                         const RequestContext& context) {
  CompileJob job;
  job.format = format;
  job.backend = backend;
  job.source = source;
  job.filename = filename;
  job.timeout_seconds = limits.wall_seconds();
  job.max_log_bytes = limits.max_log_bytes();
  CRL_RETURN_IF_ERROR(AcquireCompileSlot(context));
  auto outcome = compiler_->Compile(job, context);
  ReleaseCompileSlot();
  if (outcome.ok() && metrics_) {
    metrics_->ObserveCompile(BackendName(backend), outcome->seconds, outcome->cache_hit);
  }
  return outcome;
}

absl::StatusOr<std::string> EvalEngine::ReferenceArtifact(const Resolved& r,
                                                          const RequestContext& context) {
  std::optional<SourceFile> source = r.task->ReferenceSource(r.backend);
  if (!source) return std::string();
  CRL_ASSIGN_OR_RETURN(CompileOutcome ref, CompileSource(TaskFormat::kNative, r.backend,
                                                         source->content, source->path, {},
                                                         context));
  if (ref.verdict != v1::VERDICT_OK) {
    return absl::FailedPreconditionError(absl::StrCat(
        "task '", r.task->name(), "': the ", BackendName(r.backend),
        " reference does not compile (", VerdictShortName(ref.verdict), "): ",
        ref.log.substr(0, 2000)));
  }
  return ref.library_path;
}

std::unique_ptr<SessionInterface> EvalEngine::StartSession(const Resolved& r, Side side,
                                                           const std::string& artifact,
                                                           double budget, const Lane& lane,
                                                           const RequestContext& context,
                                                           RunnerEvent* event, PreparedSide* prepared) {
  if (metrics_) metrics_->CountRunnerStart(BackendName(r.backend));
  return r.format->Start(*r.task, {side, artifact, budget, prepared}, lane, context, event);
}

EvalEngine::ReadySides EvalEngine::PrepareSides(const Resolved& r, const Lane& lane, bool reference, double budget,
                                               const RequestContext& context) {
  ReadySides ready;
  absl::Notification reference_ready;
  auto prepare_reference = [&] {
    ready.reference = r.format->Prepare(lane, budget, context);
    reference_ready.Notify();
  };
  if (reference && !starters_.Submit(prepare_reference).ok()) prepare_reference();  // every starter busy: here
  ready.candidate = r.format->Prepare(lane, budget, context);
  if (reference) reference_ready.WaitForNotification();
  return ready;
}

EvalEngine::SessionPair EvalEngine::StartPair(const Resolved& r, const std::string& reference_artifact,
                                             const std::string& candidate_artifact, double budget,
                                             const Lane& lane, const RequestContext& context, ReadySides* ready) {
  SessionPair p;
  absl::Notification reference_started;
  auto start_reference = [&] {
    p.reference = StartSession(r, Side::kReference, reference_artifact, budget, lane, context, &p.reference_event,
                               ready ? ready->reference.get() : nullptr);
    reference_started.Notify();
  };
  if (!starters_.Submit(start_reference).ok()) start_reference();  // every starter busy: here, first
  p.candidate = StartSession(r, Side::kCandidate, candidate_artifact, budget, lane, context, &p.candidate_event,
                             ready ? ready->candidate.get() : nullptr);
  reference_started.WaitForNotification();
  return p;
}

absl::StatusOr<v1::CompileResponse> EvalEngine::Compile(const v1::CompileRequest& request,
                                                        const RequestContext& context) {
  const bool has_candidate = request.has_candidate();
  CRL_ASSIGN_OR_RETURN(Resolved r, Resolve(request.task(), has_candidate
                                                               ? request.candidate().backend()
                                                               : v1::BACKEND_UNSPECIFIED));
  if (has_candidate) {
    if (request.candidate().source().empty()) {
      return absl::InvalidArgumentError("candidate.source: empty");
    }
    CRL_ASSIGN_OR_RETURN(CompileOutcome outcome,
                         CompileSource(r.task->format(), r.backend, request.candidate().source(),
                                       request.candidate().filename(), request.limits(), context));
    return ToCompileResponse(outcome);
  }
  std::optional<SourceFile> reference = r.task->ReferenceSource(r.backend);
  if (!reference) {
    return absl::InvalidArgumentError(
        "candidate.source: required (a KernelBench reference needs no compile step)");
  }
  CRL_ASSIGN_OR_RETURN(CompileOutcome outcome,
                       CompileSource(TaskFormat::kNative, r.backend, reference->content,
                                     reference->path, request.limits(), context));
  return ToCompileResponse(outcome);
}

VerifyConfig EvalEngine::VerifyConfigFor(const v1::EvaluateRequest& request) const {
  VerifyConfig config = options_.verify;
  const v1::VerifyOptions& o = request.options();
  if (o.trials() > 0) config.trials = o.trials();
  if (o.skip_determinism_check()) config.determinism_reruns = 0;
  if (o.call_timeout_seconds() > 0) config.call_timeout_seconds = o.call_timeout_seconds();
  config.tolerance = {o.atol(), o.rtol()};
  if (o.reused_output_as_flag()) config.reused_output_as_flag = true;
  return config;
}

void EvalEngine::Finish(v1::EvaluateResponse* response, v1::Verdict verdict) {
  response->set_verdict(verdict);
  if (metrics_) {
    metrics_->CountEvaluation(verdict);
    if (std::string r = KillReason(verdict); !r.empty()) metrics_->CountSandboxKill(r);
  }
}

std::optional<std::vector<std::string>> EvalEngine::KnownDegenerate(const std::string& key) {
  absl::MutexLock lock(&mu_);
  auto it = degenerate_.find(key);
  if (it == degenerate_.end()) return std::nullopt;
  return it->second;
}

absl::StatusOr<v1::EvaluateResponse> EvalEngine::Evaluate(const v1::EvaluateRequest& request,
                                                          const RequestContext& context) {
  if (!request.has_candidate() || request.candidate().source().empty()) {
    return absl::InvalidArgumentError("candidate.source: empty");
  }
  if (request.options().trials() < 0 || request.options().trials() > 1000) {
    return absl::InvalidArgumentError("options.trials: must be between 0 and 1000");
  }
  const double keep = request.keep_for_timing_seconds();
  if (!(keep >= 0 && keep <= options_.max_keep_seconds)) {
    return absl::InvalidArgumentError(
        absl::StrCat("keep_for_timing_seconds: must be between 0 and ", options_.max_keep_seconds));
  }
  CRL_ASSIGN_OR_RETURN(Resolved r, Resolve(request.task(), request.candidate().backend()));
  v1::EvaluateResponse response;
  response.set_backend(ToProto(r.backend));

  // Compile on the CPU tier; a compile verdict ends the evaluation there.
  auto compiled = CompileSource(r.task->format(), r.backend, request.candidate().source(),
                                request.candidate().filename(), request.compile_limits(), context);
  if (!compiled.ok()) {
    CRL_RETURN_IF_ERROR(context.Check());
    response.add_messages(absl::StrCat("compile: ", compiled.status().ToString()));
    Finish(&response, v1::VERDICT_INFRA_ERROR);
    return response;
  }
  *response.mutable_compile() = ToCompileResponse(*compiled);
  response.set_artifact_id(compiled->artifact_id);
  if (compiled->verdict != v1::VERDICT_OK) {
    Finish(&response, compiled->verdict);
    return response;
  }
  CRL_ASSIGN_OR_RETURN(const std::string reference, ReferenceArtifact(r, context));

  const VerifyConfig config = VerifyConfigFor(request);
  // Correctness runs may share a GPU lane with other verifications; a
  // failure that sharing could have caused is confirmed alone on the lane
  // before it is the candidate's.
  std::string contended;  // how the run shared the GPU ("": it did not)
  CRL_ASSIGN_OR_RETURN(v1::EvaluateResponse verified,
                       VerifyOnLane(r, response, reference, compiled->library_path, config, LaneUse::kShared,
                                    context, &contended, keep));
  if (!contended.empty() && ContentionCouldCause(verified)) {
    CRL_RETURN_IF_ERROR(context.Check());
    // Said before the run's own messages, so that the last one is still the
    // reason of the verdict.
    response.add_messages(absl::StrCat("re-verified alone on the lane: the first run (",
                                       VerdictShortName(verified.verdict()), ") ", contended));
    CRL_ASSIGN_OR_RETURN(verified, VerifyOnLane(r, response, reference, compiled->library_path, config,
                                                LaneUse::kExclusive, context, nullptr, keep));
  }
  Finish(&verified, verified.verdict());
  return verified;
}

std::string EvalEngine::ProbeKey(const Resolved& r, const Lane& lane) {
  return absl::StrCat(r.task->content_id(), "/", lane.name);
}

absl::StatusOr<LaneLease> EvalEngine::AcquireReadied(const Resolved& r, const std::string& reference,
                                                     const VerifyConfig& config, LaneUse use,
                                                     bool reference_for_timing, double budget,
                                                     const RequestContext& context, ReadySides* ready,
                                                     absl::Duration* readying) {
  const absl::Time asked = clock_->MonotonicNow();
  const size_t target = lanes_->LeastHeld(r.backend);
  bool ahead = false;  // counted in readying_ until the lease is held or refused
  absl::Status live;   // the request, after readying
  if (target < lanes_->lanes().size()) {
    absl::MutexLock lock(&mu_);
    ahead = readying_ < options_.ready_ahead_per_lane * static_cast<int>(lanes_->lanes().size());
    readying_ += ahead;
  }
  if (ahead) {
    const Lane& l = lanes_->lanes()[target];
    const bool need_probes = !KnownDegenerate(ProbeKey(r, l)).has_value();
    const std::string cache_key = ReferenceCache::Key(r.task->content_id(), l.name, reference, config.trials);
    *ready = PrepareSides(r, l, reference_for_timing || !reference_cache_.Holds(cache_key, need_probes), budget,
                          context);
    *readying = clock_->MonotonicNow() - asked;
    live = context.Check();
  }
  const bool readied = ready->reference || ready->candidate;
  auto stop_ahead = [&] {
    if (!ahead) return;
    absl::MutexLock lock(&mu_);
    --readying_;
    ahead = false;
  };
  if (!readied) stop_ahead();  // holds nothing while it waits
  absl::StatusOr<LaneLease> lease =
      !live.ok() ? absl::StatusOr<LaneLease>(live)
      : readied  ? lanes_->AcquireOn(target, context, options_.lane_wait, use)
                 : lanes_->Acquire(r.backend, context, options_.lane_wait, use);
  stop_ahead();
  return lease;
}

absl::StatusOr<v1::EvaluateResponse> EvalEngine::VerifyOnLane(const Resolved& r, v1::EvaluateResponse response,
                                                             const std::string& reference,
                                                             const std::string& library_path,
                                                             const VerifyConfig& config, LaneUse use,
                                                             const RequestContext& context, std::string* contended,
                                                             double keep_seconds) {
  const double budget = VerifyBudgetSeconds(*r.task, config);
  // Sides that may be kept for their measurement on a GPU: the reference
  // starts even where its answers are recorded (it makes no call then), so
  // that the measurement, which holds the GPU alone, starts nothing.
  const bool reference_for_timing = keep_seconds > 0 && r.backend == BackendKind::kCuda;
  const absl::Time asked = clock_->MonotonicNow();
  ReadySides ready;
  absl::Duration readying;
  CRL_ASSIGN_OR_RETURN(LaneLease lease, AcquireReadied(r, reference, config, use, reference_for_timing, budget,
                                                       context, &ready, &readying));
  const absl::Time leased = clock_->MonotonicNow();
  response.set_lane_wait_seconds(absl::ToDoubleSeconds(leased - asked - readying));
  response.set_prepare_seconds(absl::ToDoubleSeconds(readying));
  const Lane& lane = lease.lane();
  LeaseGauge busy(metrics_);
  response.set_lane(lane.name);
  const std::string probe_key = ProbeKey(r, lane);
  const std::optional<std::vector<std::string>> known = KnownDegenerate(probe_key);
  // Probes run until the task is known, and on a degenerate task always
  // (each candidate is judged against its trivial solutions).
  const bool probe = !known.has_value() || !known->empty();
  // Both sides of a trial at once on a shared GPU lane; a run alone on the
  // lane (the re-verification that confirms a failure) keeps them apart, so
  // that the candidate's own reference cannot be what made it fail.
  bool concurrent = lane.backend == BackendKind::kCuda && use == LaneUse::kShared;
  auto done = [&](v1::Verdict verdict) {
    response.set_verdict(verdict);
    if (contended) {
      *contended = lease.SharedWithOthers() ? "shared it with another verification"
                   : concurrent             ? "ran its two sides on the GPU at once"
                                            : "";
    }
    return response;
  };

  // The reference's answers to this task's trials on this lane, when an
  // earlier verification recorded them: then only the candidate is called
  // (and only it starts, unless the reference starts for timing).
  const std::string cache_key = ReferenceCache::Key(r.task->content_id(), lane.name, reference, config.trials);
  const std::shared_ptr<const ReferenceRecord> recorded = reference_cache_.Lookup(cache_key, probe);
  if (metrics_ && reference_cache_.enabled()) metrics_->CountReferenceCache(recorded != nullptr);
  if (recorded) concurrent = false;  // one process called: nothing runs beside the candidate
  SessionPair sides;
  if (recorded && !reference_for_timing) {
    sides.candidate = StartSession(r, Side::kCandidate, library_path, budget, lane, context, &sides.candidate_event,
                                   ready.candidate.get());
  } else {
    sides = StartPair(r, reference, library_path, budget, lane, context, &ready);
  }
  const absl::Time started = clock_->MonotonicNow();
  response.set_start_seconds(absl::ToDoubleSeconds(started - leased));
  if (!recorded && !sides.reference) {
    CRL_RETURN_IF_ERROR(context.Check());
    response.add_messages(absl::StrCat("reference: ", sides.reference_event.message));
    return done(v1::VERDICT_INFRA_ERROR);
  }
  if (!sides.candidate) {
    CRL_RETURN_IF_ERROR(context.Check());
    response.add_messages(absl::StrCat("candidate: ", sides.candidate_event.message));
    return done(sides.candidate_event.verdict);
  }
  std::unique_ptr<SessionInterface> ref = std::move(sides.reference), cand = std::move(sides.candidate);
  VerifyConfig run = config;
  run.concurrent_sides = concurrent;
  // The reference side the protocol talks to: the record (a hit), the
  // process with its answers recorded (a miss), or the process alone.
  std::optional<CachedReferenceSession> cached;
  std::optional<RecordingReferenceSession> recording;
  SessionInterface* reference_side = ref.get();
  SeedSource seeds = seeds_;
  if (recorded) {
    reference_side = &cached.emplace(recorded);
    seeds = cached->ReplaySeeds(seeds_);
    response.set_reference_cached(true);
  } else if (reference_cache_.enabled()) {
    reference_side = &recording.emplace(ref.get(), reference_cache_.max_record_bytes());
    seeds = recording->RecordSeeds(seeds_);
  }
  // Timing waiting for this lane (a window open): the sides freeze and the
  // lease steps aside until the timing has had the lane (shared leases
  // only: one held alone has no one to make way for). Looked at as soon as
  // a call's sides have answered, so that the worker compares their
  // answers off the lane, and again before the next call.
  const bool may_step_aside = use == LaneUse::kShared && StepsAside(lane);
  absl::Duration aside;
  int steps_aside = 0;
  auto step_aside = [&] {
    FreezeSides(ref.get(), cand.get(), true);
    lease.StepAside();
    ++steps_aside;
  };
  CallHooks hooks;
  hooks.after_call = [&] {
    if (may_step_aside && lease.TimingWaiting()) step_aside();
  };
  hooks.before_call = [&]() -> absl::Status {
    if (!may_step_aside || (!lease.aside() && !lease.TimingWaiting())) return absl::OkStatus();
    const absl::Time t0 = clock_->MonotonicNow();
    if (!lease.aside()) step_aside();
    // On an error the sides end frozen, with the lease aside.
    CRL_RETURN_IF_ERROR(lease.Rejoin(LaneUse::kShared, context, options_.lane_wait));
    FreezeSides(ref.get(), cand.get(), false);
    // The time aside was not the sides': their wall budgets start again.
    if (ref) ref->Adopt(context, budget);
    cand->Adopt(context, budget);
    aside += clock_->MonotonicNow() - t0;
    return absl::OkStatus();
  };
  CRL_ASSIGN_OR_RETURN(VerifyResult verified, VerifyCandidate(*r.task, reference_side, cand.get(), run, seeds,
                                                              probe, context, hooks));
  response.set_trials_seconds(absl::ToDoubleSeconds(clock_->MonotonicNow() - started - aside));
  response.set_lane_wait_seconds(response.lane_wait_seconds() + absl::ToDoubleSeconds(aside));
  response.set_steps_aside(steps_aside);
  if (recording) {
    // Kept only when the reference answered every trial of the plan.
    reference_cache_.Insert(cache_key, recording->Complete(verified.planned_trials, probe));
  }
  // A task once found degenerate stays so for this lane; its probes still
  // run, to judge each candidate against the trivial solutions.
  std::vector<std::string> degenerate = known.value_or(std::vector<std::string>{});
  if (verified.probed && !known.has_value()) {
    degenerate = verified.degenerate_probes;
    absl::MutexLock lock(&mu_);
    degenerate_[probe_key] = degenerate;
  }
  response.set_custom_kernel(verified.custom_kernel);
  *response.mutable_correctness() = verified.report;
  for (const auto& m : verified.report.messages()) response.add_messages(m);
  if (!degenerate.empty() && verified.verdict == v1::VERDICT_OK) {
    const DegenerateJudgement judged =
        JudgeDegenerate(r.task->name(), degenerate, verified.probes, config.degenerate_margin);
    if (judged.kind == DegenerateJudgement::kTrivial) {
      verified.verdict = v1::VERDICT_WRONG_ANSWER;
      verified.flags.clear();
      verified.flag_evidence.clear();
      response.mutable_correctness()->add_messages(judged.message);
      response.add_messages(judged.message);
    } else if (judged.kind == DegenerateJudgement::kFlagged) {
      verified.flags.push_back(v1::FLAG_DEGENERATE_TASK);
      verified.flag_evidence.push_back(judged.message);  // said once, as the flag's evidence
    } else {
      response.add_messages(judged.message);
    }
  }
  for (size_t i = 0; i < verified.flags.size(); ++i) {
    response.add_flags(verified.flags[i]);
    response.add_flag_evidence(verified.flag_evidence[i]);
  }
  v1::EvaluateResponse out = done(verified.verdict);
  // Verified: its sides may wait, on the lane, for their measurement.
  if (verified.verdict == v1::VERDICT_OK && keep_seconds > 0) {
    out.set_kept_pair(Keep(r, reference, library_path, lease, ref, cand, keep_seconds));
  }
  if (out.kept_pair().empty()) {
    cached.reset();  // they refer to `ref`
    recording.reset();
    Retire(r.task, std::move(lease), std::move(cand), std::move(ref));
  }
  return out;
}

v1::WorkerInfo EvalEngine::Info() const {
  v1::WorkerInfo info;
  bool host = false, cuda = false;
  for (const Lane& l : lanes_->lanes()) {
    info.add_lanes(l.name);
    (l.backend == BackendKind::kCuda ? cuda : host) = true;
  }
  if (host) {
    info.add_backends(v1::BACKEND_HOST);
    info.add_toolchains(compiler_->Toolchain(BackendKind::kHost));
  }
  if (cuda) {
    info.add_backends(v1::BACKEND_CUDA);
    info.add_toolchains(compiler_->Toolchain(BackendKind::kCuda));
  }
  return info;
}

}  // namespace crl
