// EvalEngine's measuring: Measure (one side's timed calls, for reference
// baselines), MeasurePair (both sides interleaved on a lane held alone,
// for the timing oracle) and the verified pairs kept for it. Compiling and
// verifying are in eval_engine.cc.
#include <unistd.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status.h"
#include "runner/inputs.h"
#include "services/worker/engine_parts.h"
#include "services/worker/eval_engine.h"
#include "services/worker/measure/pair_loop.h"

namespace crl {

void EvalEngine::DropExpiredKept() {
  std::vector<std::unique_ptr<KeptPair>> expired;
  {
    absl::MutexLock lock(&mu_);
    const absl::Time now = clock_->MonotonicNow();
    for (auto it = kept_.begin(); it != kept_.end();) {
      if (it->second->expires <= now) {
        expired.push_back(std::move(it->second));
        it = kept_.erase(it);
      } else {
        ++it;
      }
    }
  }
  // Ended here, outside the lock (a process takes a moment to stop).
}

int EvalEngine::KeptPairs() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(kept_.size());
}

std::string EvalEngine::Keep(const Resolved& r, const std::string& reference_artifact,
                             const std::string& library_path, LaneLease& lease,
                             std::unique_ptr<SessionInterface>& reference,
                             std::unique_ptr<SessionInterface>& candidate, double seconds) {
  // Held on the lane (no stepping aside), a lease about to take the lane
  // alone would wait for this one, and this one's measurement could not
  // take it: let go at once instead.
  const bool aside = StepsAside(lease.lane());
  if ((!aside && lease.UpgradePending()) || (reference && reference->dead()) || candidate->dead()) return "";
  const double budget = seconds + 5;
  if ((reference && !reference->Adopt(kept_context_, budget)) || !candidate->Adopt(kept_context_, budget)) {
    return "";
  }
  if (aside) {
    // Off the lane until the measurement takes it alone (MeasureOnce).
    FreezeSides(reference.get(), candidate.get(), true);
    lease.StepAside();
  }
  auto pair = std::make_unique<KeptPair>(std::move(lease), metrics_);
  pair->task = r.task;
  pair->reference_artifact = reference_artifact;
  pair->library_path = library_path;
  pair->reference = std::move(reference);
  pair->candidate = std::move(candidate);
  pair->expires = clock_->MonotonicNow() + absl::Seconds(seconds);
  absl::MutexLock lock(&mu_);
  std::string token = absl::StrFormat("kept-%d-%016x", ++kept_count_, seeds_());
  kept_[token] = std::move(pair);
  return token;
}

std::unique_ptr<EvalEngine::KeptPair> EvalEngine::TakeKept(const std::string& token, const Resolved& r,
                                                           const std::string& reference_artifact,
                                                           const std::string& library_path, std::string* why) {
  std::unique_ptr<KeptPair> pair;
  {
    absl::MutexLock lock(&mu_);
    auto it = kept_.find(token);
    if (it != kept_.end()) {
      pair = std::move(it->second);
      kept_.erase(it);
    }
  }
  if (!pair) {
    *why = absl::StrCat("kept_pair '", token, "' is not kept here (expired, taken, or another worker's)");
    return nullptr;
  }
  if (pair->task->content_id() != r.task->content_id() || pair->library_path != library_path ||
      pair->reference_artifact != reference_artifact) {
    *why = absl::StrCat("kept_pair '", token, "' was kept for another candidate or task; it is ended");
    return nullptr;  // `pair` ends here
  }
  return pair;
}

absl::StatusOr<v1::MeasureResponse> EvalEngine::Measure(const v1::MeasureRequest& request,
                                                        const RequestContext& context) {
  if (request.iterations() < 0 || request.iterations() > 100000) {
    return absl::InvalidArgumentError("iterations: must be between 0 and 100000");
  }
  if (request.warmup() < 0 || request.warmup() > 10000) {
    return absl::InvalidArgumentError("warmup: must be between 0 and 10000");
  }
  CRL_ASSIGN_OR_RETURN(Resolved r, Resolve(request.task(), request.backend()));
  const Side side = request.artifact_id().empty() ? Side::kReference : Side::kCandidate;
  std::string artifact;
  if (side == Side::kReference) {
    CRL_ASSIGN_OR_RETURN(artifact, ReferenceArtifact(r, context));
  } else {
    CRL_ASSIGN_OR_RETURN(artifact, compiler_->LibraryFor(request.artifact_id()));
  }
  const int iterations =
      request.iterations() > 0 ? request.iterations() : options_.measure_iterations;
  const int warmup = request.warmup() > 0 ? request.warmup() : options_.measure_warmup;
  const double per_call = options_.measure_call_timeout_seconds;

  v1::MeasureResponse response;
  response.set_backend(ToProto(r.backend));
  CRL_ASSIGN_OR_RETURN(LaneLease lease, lanes_->Acquire(r.backend, context, options_.lane_wait));
  LeaseGauge busy(metrics_);
  response.set_lane(lease.lane().name);
  auto failed = [&](const RunnerEvent& event, const std::string& where)
      -> absl::StatusOr<v1::MeasureResponse> {
    CRL_RETURN_IF_ERROR(context.Check());
    response.set_verdict(VerdictFor(side, event));
    response.add_messages(absl::StrCat(where, event.message));
    return response;
  };
  RunnerEvent event;
  auto session = StartSession(r, side, artifact,
                              per_call * (iterations + warmup) + r.task->session_overhead_seconds(),
                              lease.lane(), context, &event);
  if (!session) return failed(event, "");
  response.set_device_name(session->device_name());
  const uint64_t seed = request.seed() ? request.seed() : seeds_();
  for (int i = 0; i < warmup + iterations; ++i) {
    TimedResult result;
    // A host call leaves its side stopped (its outputs are read from the
    // stopped process: native_format.cc); the next call must find it running.
    session->Freeze(false);
    const absl::Time t0 = clock_->MonotonicNow();
    // Fresh inputs every call.
    event = session->Timed({runner::DeriveSeed(seed, 1000000 + i), !request.no_l2_flush(), false},
                           per_call, &result);
    const double outside = absl::ToDoubleSeconds(clock_->MonotonicNow() - t0);
    if (!event.ok) return failed(event, absl::StrCat("call ", i + 1, ": "));
    if (i < warmup) continue;
    v1::TimingSample* s = response.add_samples();
    s->set_stream_event_seconds(result.stream_event_seconds);
    s->set_device_sync_seconds(result.device_sync_seconds);
    s->set_host_seconds(result.host_seconds);
    response.add_outside_seconds(outside);
  }
  session->Close();
  response.set_verdict(v1::VERDICT_OK);
  return response;
}

absl::StatusOr<v1::MeasurePairResponse> EvalEngine::MeasurePair(
    const v1::MeasurePairRequest& request, const RequestContext& context) {
  CRL_RETURN_IF_ERROR(ValidatePairRequest(request));
  CRL_ASSIGN_OR_RETURN(Resolved r, Resolve(request.task(), request.backend()));
  CRL_ASSIGN_OR_RETURN(std::string cand_artifact,
                       compiler_->LibraryFor(request.candidate_artifact_id()));
  std::string ref_artifact;
  if (request.reference_artifact_id().empty()) {
    CRL_ASSIGN_OR_RETURN(ref_artifact, ReferenceArtifact(r, context));
  } else if (!r.task->ReferenceSource(r.backend)) {
    return absl::InvalidArgumentError(
        "reference_artifact_id: KernelBench tasks time their own Model as the reference");
  } else {
    CRL_ASSIGN_OR_RETURN(ref_artifact, compiler_->LibraryFor(request.reference_artifact_id()));
  }
  v1::MeasurePairRequest eager = request;
  eager.set_eager_timing(true);
  // A format whose sessions cannot replay graphs is timed as launched.
  const bool replay = r.format->graph_replay();
  v1::MeasurePairResponse response;
  std::unique_ptr<KeptPair> kept;
  if (!request.kept_pair().empty()) {
    std::string why;
    kept = TakeKept(request.kept_pair(), r, ref_artifact, cand_artifact, &why);
    if (!kept) response.add_messages(absl::StrCat(why, ": both sides started afresh"));
  }
  CRL_RETURN_IF_ERROR(MeasureOnce(r, ref_artifact, cand_artifact, replay ? request : eager, std::move(kept), context,
                                  &response));
  if (replay && response.timing_mode().empty() && !response.graph_fallback().empty()) {
    // A side could not be captured, and the attempt may have left its
    // process in any state: the measurement as launched starts over with
    // fresh sides for both.
    v1::MeasurePairResponse again;
    CRL_RETURN_IF_ERROR(MeasureOnce(r, ref_artifact, cand_artifact, eager, nullptr, context, &again));
    again.set_graph_fallback(response.graph_fallback());
    again.set_lane_seconds(again.lane_seconds() + response.lane_seconds());
    again.set_start_seconds(again.start_seconds() + response.start_seconds());
    again.set_lane_wait_seconds(again.lane_wait_seconds() + response.lane_wait_seconds());
    response = std::move(again);
  }
  return response;
}

absl::Status EvalEngine::MeasureOnce(const Resolved& r, const std::string& ref_artifact,
                                     const std::string& cand_artifact, const v1::MeasurePairRequest& request,
                                     std::unique_ptr<KeptPair> kept, const RequestContext& context,
                                     v1::MeasurePairResponse* out) {
  // The checks' secret is drawn afresh even when the request fixes the
  // inputs' seed: it is never sent to a side.
  const uint64_t seed = request.seed() ? request.seed() : seeds_();
  const PairLoop loop(request, seed, seeds_(), clock_, r.backend == BackendKind::kCuda);
  const double per_call = options_.measure_call_timeout_seconds;
  v1::MeasurePairResponse& response = *out;
  response.set_backend(ToProto(r.backend));
  if (r.task->task_bytes() > 0) response.set_task_bytes(r.task->task_bytes());
  if (r.task->task_flops() > 0) response.set_task_flops(r.task->task_flops());
  // Both sides stay alive for the whole loop, so drift hits both.
  const double budget = loop.SessionBudget(per_call);
  // The lane is held alone from before the sides start: a candidate's load
  // runs its code (threads, kernels), which must never sit beside another
  // measurement. Kept sides never have: their lease was held throughout.
  const absl::Time asked = clock_->MonotonicNow();
  // Timed as launched on a GPU where graphs could replay (a side that could
  // not be captured, or a request for it): host-bound launches, so the
  // whole worker is kept quiet for it (LaneUse::kQuiet), and kept sides,
  // whose lease would only make their own lane alone, start afresh.
  const bool quiet =
      r.backend == BackendKind::kCuda && r.format->graph_replay() && request.eager_timing();
  if (kept && quiet) {
    response.add_messages("timed as launched, with the worker quiet: both sides started afresh");
    kept.reset();
  }
  std::optional<LaneLease> lease;
  std::unique_ptr<SessionInterface> ref, cand;
  if (kept) {
    // Aside (frozen): back on the lane alone. Held: alone in place.
    absl::Status alone = kept->lease.aside() ? kept->lease.Rejoin(LaneUse::kExclusive, context, options_.lane_wait)
                                             : kept->lease.Upgrade(context, options_.lane_wait);
    if (alone.ok()) FreezeSides(kept->reference.get(), kept->candidate.get(), false);
    if (alone.ok() && (!kept->reference || kept->reference->Adopt(context, budget)) &&
        kept->candidate->Adopt(context, budget)) {
      lease.emplace(std::move(kept->lease));
      ref = std::move(kept->reference);  // null when verified from the cache: started below
      cand = std::move(kept->candidate);
      response.set_kept_pair_used(true);
    } else {
      CRL_RETURN_IF_ERROR(context.Check());
      response.add_messages(absl::StrCat("the verified sides could not be timed (",
                                         alone.ok() ? "a side had ended" : alone.message(),
                                         "): both started afresh"));
    }
    kept.reset();  // what was not taken ends, and lets go of its lease, here
  }
  if (!lease) {
    CRL_ASSIGN_OR_RETURN(LaneLease fresh, lanes_->Acquire(r.backend, context, options_.lane_wait,
                                                          quiet ? LaneUse::kQuiet : LaneUse::kExclusive));
    lease.emplace(std::move(fresh));
  }
  const absl::Time leased = clock_->MonotonicNow();
  response.set_lane_wait_seconds(absl::ToDoubleSeconds(leased - asked));
  const Lane& lane = lease->lane();
  LeaseGauge busy(metrics_);
  // Every response past this point says how long it held the lane.
  auto held = [&]() { response.set_lane_seconds(absl::ToDoubleSeconds(clock_->MonotonicNow() - leased)); };
  response.set_lane(lane.name);
  auto fail = [&](Side side, const RunnerEvent& event) {
    response.set_verdict(VerdictFor(side, event));
    response.add_messages(absl::StrCat(SideName(side), ": ", event.message));
  };
  RunnerEvent event;
  if (!cand) {
    SessionPair sides = StartPair(r, ref_artifact, cand_artifact, budget, lane, context);
    ref = std::move(sides.reference);
    cand = std::move(sides.candidate);
    if (!ref) {
      fail(Side::kReference, sides.reference_event);
    } else if (!cand) {
      fail(Side::kCandidate, sides.candidate_event);
    }
  } else if (!ref) {
    // A kept candidate verified against recorded reference answers.
    ref = StartSession(r, Side::kReference, ref_artifact, budget, lane, context, &event);
    if (!ref) fail(Side::kReference, event);
  }
  response.set_start_seconds(absl::ToDoubleSeconds(clock_->MonotonicNow() - leased));
  if (!ref || !cand) {
    held();
    return context.Check();
  }
  response.set_device_name(cand->device_name());
  if (const int cpu = TimingCpu(lane); cpu >= 0) {
    // One CPU for both sides of a GPU measurement: launch-bound calls are
    // as fast as the core that issues them, and two processes would
    // otherwise land on cores in different states.
    ref->PinToCpu(cpu);
    cand->PinToCpu(cpu);
  }

  // A batch of short calls gets twice one call's limit: the reference's
  // whole batch takes about a millisecond.
  //
  // A side runs only for its own calls: the other is stopped (SIGSTOP to its
  // process group, which nothing it started can leave: seccomp.h) for the
  // whole call, and a side is stopped again as soon as its call answers. No
  // thread or child of one side can take the CPU, the memory bandwidth or
  // the GPU's queue from the other while it is timed, nor finish work
  // between its calls. (A session that must run to hand over its outputs
  // lets itself go in LastOutputs.)
  //
  // Where both sides stage (task_format.h: KernelBench on a host lane), a
  // pair's inputs are made once, by the reference, before either side of
  // the pair is timed; each side then gets them written in just before its
  // clock starts.
  const bool staging = ref->Stages() && cand->Stages();
  std::shared_ptr<StagedSample> staged;
  int staged_calls = 0;
  auto stage = [&](const PairLoop::Ask& ask) -> bool {
    staged = std::make_shared<StagedSample>();
    const TimedRequest sample_request{ask.seed, !request.no_l2_flush(), false, ask.calls, false};
    for (Side side : {Side::kReference, Side::kCandidate}) {
      SessionInterface* s = side == Side::kReference ? ref.get() : cand.get();
      (side == Side::kReference ? cand : ref)->Freeze(true);
      s->Freeze(false);
      event = s->Stage(sample_request, per_call, staged);
      s->Freeze(true);
      if (!event.ok) {
        fail(side, event);
        return false;
      }
      if (!staged->unstaged.empty()) break;  // timed as the sides time themselves
    }
    staged->seed = ask.seed;
    staged_calls = ask.calls;
    return true;
  };
  auto timed = [&](const PairLoop::Ask& ask, PairLoop::Timed* out) -> bool {
    if (staging && (!staged || staged->seed != ask.seed || staged_calls != ask.calls) && !stage(ask)) return false;
    TimedResult result;
    SessionInterface* self = ask.is_ref ? ref.get() : cand.get();
    SessionInterface* other = ask.is_ref ? cand.get() : ref.get();
    other->Freeze(true);
    self->Freeze(false);
    const absl::Time t0 = clock_->MonotonicNow();
    event = self->Timed({ask.seed, !request.no_l2_flush(), ask.check, ask.calls, ask.graph},
                        ask.calls > 1 ? 2 * per_call : per_call, &result);
    out->outside_seconds = result.staged ? result.host_seconds : absl::ToDoubleSeconds(clock_->MonotonicNow() - t0);
    self->Freeze(true);
    if (!event.ok) {
      fail(ask.is_ref ? Side::kReference : Side::kCandidate, event);
      return false;
    }
    out->sample.set_stream_event_seconds(result.stream_event_seconds);
    out->sample.set_device_sync_seconds(result.device_sync_seconds);
    out->sample.set_host_seconds(result.host_seconds);
    out->call_bytes = result.call_bytes;
    out->graph = result.graph;
    out->graph_error = std::move(result.graph_error);
    return true;
  };
  // Outputs are fetched after both sides of a pair returned.
  auto check = [&](int, int call, const OutputSample& sample) -> std::string {
    std::vector<OutputTensor> outputs[2];
    for (Side side : {Side::kReference, Side::kCandidate}) {
      SessionInterface* s = side == Side::kReference ? ref.get() : cand.get();
      RunnerEvent e = s->LastOutputs(per_call, call, sample, &outputs[side == Side::kReference ? 0 : 1]);
      if (!e.ok) return absl::StrCat(SideName(side), ": ", e.message);
    }
    return CompareOutputs(*r.task, {}, outputs[1], outputs[0], nullptr);
  };
  const bool completed = loop.Run(timed, check, &response);
  FreezeSides(ref.get(), cand.get(), false);  // nothing more is timed: let them end as they would
  held();
  CRL_RETURN_IF_ERROR(context.Check());
  if (!completed || response.timing_mode().empty()) return absl::OkStatus();
  if (ref->dead() || cand->dead()) {
    response.set_verdict(v1::VERDICT_INFRA_ERROR);
    response.add_messages("a runner ended during output checks");
    return absl::OkStatus();
  }
  Retire(r.task, std::move(*lease), std::move(cand), std::move(ref));
  response.set_verdict(v1::VERDICT_OK);
  return absl::OkStatus();
}

int EvalEngine::TimingCpu(const Lane& lane) const {
  if (!options_.pin_gpu_timing || lane.backend != BackendKind::kCuda) return -1;
  int host = 0;
  for (const Lane& l : lanes_->lanes()) host += l.backend == BackendKind::kHost;
  return LaneCpu(lane, host, sysconf(_SC_NPROCESSORS_ONLN));
}

}  // namespace crl
