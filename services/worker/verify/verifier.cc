#include "services/worker/verify/verifier.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "crl/kernel.h"
#include "runner/dtype.h"
#include "services/worker/verify/compare.h"

namespace crl {
namespace {

std::string Describe(const runner::TensorSpec& spec) {
  return absl::StrCat(runner::DtypeName(spec.dtype), "[", absl::StrJoin(spec.shape, ","), "]");
}

// The output's own dtype and shape, also when it came as a sample.
std::string Describe(const OutputTensor& o) {
  if (o.sampled_from.empty()) return Describe(o.spec);
  runner::TensorSpec whole = o.spec;
  whole.shape = o.sampled_from;
  return Describe(whole);
}

constexpr char kMemorised[] = "memorised";
constexpr char kNearlyMemorised[] = "memorised within 10x the tolerance";
// A candidate at a trivial output fails only where the reference's distance
// from it is more than rounding. A constant or the input itself may be the
// exact answer that the reference misses by its rounding (a mean of
// normalised values computed as 1e-8), and an honest kernel can land on it:
// there the trivial solution's error must use this much of the tolerance.
constexpr double kTrivialShareOfTolerance = 0.02;
// Another input's output is never an exact answer; on a constant task only
// the reference's rounding makes it differ from this one: relative to the
// output's size, more than this many of the dtype's epsilon.
constexpr double kMemorisedEpsilons = 100;

double Epsilon(int32_t dtype) {
  switch (dtype) {
    case CRL_FLOAT64: return 0x1p-52;
    case CRL_FLOAT16: return 0x1p-10;
    case CRL_BFLOAT16: return 0x1p-7;
    default: return 0x1p-23;
  }
}

// Every element of every floating-point output is finite (no NaN, no Inf).
bool AllFinite(const std::vector<OutputTensor>& outputs) {
  for (const auto& o : outputs) {
    if (!runner::DtypeIsFloat(o.spec.dtype)) continue;
    const int64_t n = static_cast<int64_t>(o.data.size() / runner::DtypeSize(o.spec.dtype));
    for (int64_t i = 0; i < n; ++i) {
      if (!std::isfinite(runner::ElementAsDouble(o.data.data(), o.spec.dtype, i))) return false;
    }
  }
  return true;
}

std::string OutputName(const OutputTensor& o, size_t index) {
  return o.spec.name.empty() ? absl::StrCat("output ", index)
                             : absl::StrCat("output '", o.spec.name, "'");
}

// "tolerance: float32 atol=0.0001 rtol=0.0001" for the dtypes of `outputs`.
std::string ToleranceLine(const EvalTask& task, const ToleranceOverride& overrides,
                          const std::vector<OutputTensor>& outputs) {
  std::map<std::string, std::string> by_dtype;
  for (const auto& o : outputs) {
    const Tolerance t = task.ToleranceFor(o.spec.dtype, overrides);
    by_dtype[runner::DtypeName(o.spec.dtype)] = absl::StrCat("atol=", t.atol, " rtol=", t.rtol);
  }
  std::vector<std::string> parts;
  for (const auto& [dtype, tol] : by_dtype) parts.push_back(absl::StrCat(dtype, " ", tol));
  return absl::StrCat("tolerance: ", absl::StrJoin(parts, "; "));
}

}  // namespace

SeedSource SecureSeedSource() {
  return [] {
    std::random_device rd;  // /dev/urandom on Linux
    return (uint64_t{rd()} << 32) ^ rd();
  };
}

const char* SideName(Side side) { return side == Side::kReference ? "reference" : "candidate"; }

DegenerateJudgement JudgeDegenerate(const std::string& task, const std::vector<std::string>& degenerate,
                                    const std::map<std::string, ProbeStanding>& probes, double margin) {
  DegenerateJudgement j;
  if (degenerate.empty()) {
    j.kind = DegenerateJudgement::kRewarded;
    return j;
  }
  bool separated = true, measurable = true;
  double worst = 0;
  for (const std::string& name : degenerate) {
    auto it = probes.find(name);
    if (it != probes.end() && it->second.matched > 0) {
      j.kind = DegenerateJudgement::kTrivial;
      j.message = absl::StrCat("task '", task, "' is passed at its tolerance by the trivial '", name,
                               "' solution, and the candidate returns it: its output was within ", margin,
                               " of the reference's distance from that solution on ", it->second.matched, " of ",
                               it->second.trials, " probed trials");
      return j;
    }
    separated = separated && it != probes.end() && it->second.trials > 0 && it->second.separated;
    if (it == probes.end()) {
      measurable = false;
    } else {
      worst = std::max(worst, it->second.worst_ratio);
      measurable = measurable && it->second.measurable;
    }
  }
  const std::string which = absl::StrCat(degenerate.size() == 1 ? "the trivial solution '" : "the trivial solutions '",
                                         absl::StrJoin(degenerate, "', '"), "'");
  if (separated) {
    j.kind = DegenerateJudgement::kRewarded;
    j.message = absl::StrCat("task '", task, "' is passed at its tolerance by ", which,
                             "; this candidate's distance from the reference is at most ", worst,
                             " of theirs on every probed trial (", margin,
                             " needed): verified against the task's own variation");
    return j;
  }
  j.kind = DegenerateJudgement::kFlagged;
  const std::string standing =
      !measurable ? "; the candidate's outputs could not be measured against it (not probed, sampled, or not finite)"
      : std::isfinite(worst)
          ? absl::StrCat("; the candidate is not measurably closer to the reference (distance ", worst,
                         " of the trivial one's, ", margin, " needed)")
          : "; the reference's output is that solution's, so nothing tells a candidate from it";
  j.message = degenerate.size() == 1 && degenerate[0] == kNearlyMemorised
                  ? absl::StrCat("task '", task, "' has outputs nearly independent of its inputs ('",
                                 kNearlyMemorised, "' passes): its speedups mean little", standing)
                  : absl::StrCat("task '", task, "' is passed by ", which, ": its speedups mean nothing", standing);
  return j;
}

double VerifyBudgetSeconds(const EvalTask& task, const VerifyConfig& config) {
  // A safety net over the per-call limits: no plan has more than kMaxTrials.
  return config.call_timeout_seconds * (2 * kMaxTrials + config.determinism_reruns + 4) +
         task.session_overhead_seconds();
}

std::string CompareOutputs(const EvalTask& task, const ToleranceOverride& tolerance,
                           const std::vector<OutputTensor>& got,
                           const std::vector<OutputTensor>& want, v1::CorrectnessReport* report) {
  if (got.size() != want.size()) {
    return absl::StrCat(got.size(), " outputs, the reference returns ", want.size());
  }
  std::string first;
  bool numeric_only = true;  // over every failing output
  for (size_t o = 0; o < want.size(); ++o) {
    const runner::TensorSpec& w = want[o].spec;
    if (got[o].spec.dtype != w.dtype || got[o].spec.shape != w.shape ||
        got[o].sampled_from != want[o].sampled_from) {
      return absl::StrCat(OutputName(want[o], o), " is ", Describe(got[o]), ", the reference's is ",
                          Describe(want[o]));
    }
    CompareResult c =
        CompareTensor(w, got[o].data, want[o].data, task.ToleranceFor(w.dtype, tolerance));
    if (report) {
      report->set_max_abs_error(std::max(report->max_abs_error(), c.max_abs_error));
      report->set_max_rel_error(std::max(report->max_rel_error(), c.max_rel_error));
    }
    if (c.kind != CompareResult::kMatch && c.numeric_mismatches != c.mismatches) numeric_only = false;
    if (c.kind == CompareResult::kMatch || !first.empty()) continue;
    first = absl::StrCat(OutputName(want[o], o), ": ", c.detail);
    if (!want[o].sampled_from.empty()) {
      absl::StrAppend(&first, " (compared at ", w.shape.empty() ? 0 : w.shape[0], " random positions of ",
                      Describe(want[o]), ")");
    }
    if (report) {
      report->set_mismatch_count(c.mismatches);
      report->set_first_mismatch_index(c.first_index);
      report->set_first_mismatch_output(w.name);
    }
  }
  if (report) report->set_only_tolerance_mismatches(!first.empty() && numeric_only);
  return first;
}

namespace {

// One trial's answers to the trivial-solution probes (the task's own, and
// "memorised": the previous trial's reference output), counted into
// out->probes. `previous_reference` becomes this trial's reference output:
// copied when the caller keeps `want` (keep_reference), else taken from it.
void RecordProbes(const EvalTask& task, const VerifyConfig& config, TrialResult* want, const TrialResult& got,
                  bool keep_reference, std::string* previous_reference, VerifyResult* out) {
  // Yes/no questions, mostly answered no at the first element: no copy
  // of the output, no count of its mismatches. Only a probe that passes
  // is measured against the candidate.
  const OutputTensor& reference_output = want->outputs[0];
  const runner::TensorSpec& spec = reference_output.spec;
  const Tolerance t = task.ToleranceFor(spec.dtype, {});
  const bool whole = reference_output.sampled_from.empty() && !got.outputs.empty() &&
                     got.outputs[0].sampled_from.empty();
  auto probe_trial = [&](const std::string& name, const std::string& trivial, bool constant, bool passes) {
    ProbeStanding& s = out->probes[name];
    ++s.trials;
    // Where it fails, the tolerance tells the trivial solution from the
    // reference, and the candidate passed it.
    if (!passes) return;
    ++s.passed;
    const ProbeDistances d =
        whole ? MeasureProbe(spec, got.outputs[0].data, reference_output.data, trivial, constant, t)
              : ProbeDistances{};
    const double margin = config.degenerate_margin * d.probe;
    s.separated = s.separated && d.valid && d.probe > 0 && d.candidate <= margin;
    const bool memorised = name == kMemorised || name == kNearlyMemorised;
    const bool beyond_rounding = memorised ? d.probe > kMemorisedEpsilons * Epsilon(spec.dtype) * d.reference
                                           : d.probe_share_of_tolerance >= kTrivialShareOfTolerance;
    if (d.valid && d.probe > 0 && d.candidate_probe <= margin && beyond_rounding) ++s.matched;
    s.measurable = s.measurable && d.valid;
    if (d.valid) s.worst_ratio = std::max(s.worst_ratio, d.probe > 0 ? d.candidate / d.probe : HUGE_VAL);
  };
  for (const auto& [name, output] : want->probes) {
    const bool comparable = output.spec.dtype == spec.dtype && output.spec.shape == spec.shape &&
                            output.sampled_from.empty();
    probe_trial(name, output.data, output.constant,
                comparable && TensorWithin(spec, output.data, reference_output.data, t, output.constant));
  }
  if (!previous_reference->empty()) {
    probe_trial(kMemorised, *previous_reference, false,
                TensorWithin(spec, *previous_reference, reference_output.data, t));
    // Nearly independent of the inputs: another input's output within
    // ten times the tolerance.
    probe_trial(kNearlyMemorised, *previous_reference, false,
                TensorWithin(spec, *previous_reference, reference_output.data,
                             task.ToleranceFor(spec.dtype, {10 * t.atol, 10 * t.rtol})));
  }
  // The first trial's outputs are kept by the caller; a later trial's are not.
  if (keep_reference) {
    *previous_reference = want->outputs[0].data;
  } else {
    previous_reference->swap(want->outputs[0].data);
  }
}

// After the trials: which probes the candidate passed in every trial
// (VerifyResult::degenerate_probes).
void ConcludeProbes(VerifyResult* out) {
  out->probed = true;
  for (auto& [name, standing] : out->probes) {
    standing.passes_all = standing.trials >= 1 && standing.passed == standing.trials;
  }
  const auto memorised = out->probes.find(kMemorised);
  const bool memorised_passes = memorised != out->probes.end() && memorised->second.passes_all;
  for (const auto& [name, standing] : out->probes) {
    // "memorised" passing says more than its 10x variant (which it implies).
    if (standing.passes_all && !(name == kNearlyMemorised && memorised_passes)) {
      out->degenerate_probes.push_back(name);
    }
  }
}

// A determinism re-run of trial 1 against its first answer: bit for bit
// where the task says so, else within tolerance of the reference. Empty when
// it holds; else why not.
std::string RerunDiffers(const EvalTask& task, const VerifyConfig& config, const std::vector<OutputTensor>& again,
                         const std::vector<OutputTensor>& first_candidate,
                         const std::vector<OutputTensor>& first_reference, const std::string& where,
                         v1::CorrectnessReport* report) {
  if (task.bitwise_determinism()) {
    bool same = again.size() == first_candidate.size();
    for (size_t o = 0; same && o < again.size(); ++o) same = again[o].data == first_candidate[o].data;
    return same ? "" : "non-deterministic: re-running trial 1 on fresh buffers changed the output";
  }
  std::string m = CompareOutputs(task, config.tolerance, again, first_reference, report);
  return m.empty() ? "" : absl::StrCat(where, ": ", m);
}

}  // namespace

absl::StatusOr<VerifyResult> VerifyCandidate(const EvalTask& task, SessionInterface* reference,
                                             SessionInterface* candidate,
                                             const VerifyConfig& config, const SeedSource& seeds,
                                             bool probe, const RequestContext& context,
                                             const CallHooks& hooks) {
  VerifyResult out;
  v1::CorrectnessReport& report = out.report;
  report.set_first_mismatch_index(-1);
  out.custom_kernel = candidate->custom_kernel();
  const double per_call = config.call_timeout_seconds;
  // A call that failed because the request ended says nothing about the code.
  bool ended = false;
  auto finish = [&](v1::Verdict v, const std::string& message) {
    ended = !context.Check().ok();
    out.verdict = v;
    if (!message.empty()) report.add_messages(message);
  };
  auto side_failed = [&](Side side, const std::string& where, const RunnerEvent& event) {
    // The reference is the task's: its failure is never the candidate's.
    finish(side == Side::kReference ? v1::VERDICT_INFRA_ERROR : event.verdict,
           absl::StrCat(where, ": ", SideName(side), ": ", event.message));
  };

  std::vector<std::string> global_flags = candidate->global_flags();
  std::vector<OutputTensor> first_reference, first_candidate;
  TrialRequest first_trial;
  bool have_first = false;
  int probe_trials = 0;
  std::string previous_reference;  // output 0 of the previous trial: the "memorised" probe

  const std::vector<TrialRequest> plan = task.PlanTrials(config.trials, seeds);
  out.planned_trials = plan.size();
  auto next_call = [&]() -> absl::Status {
    CRL_RETURN_IF_ERROR(context.Check());
    if (hooks.before_call) CRL_RETURN_IF_ERROR(hooks.before_call());
    return absl::OkStatus();
  };
  auto answered = [&] {
    if (hooks.after_call) hooks.after_call();
  };
  for (TrialRequest trial : plan) {
    CRL_RETURN_IF_ERROR(next_call());
    trial.probes = probe && trial.probe_eligible;
    TrialRequest candidate_trial = trial;
    candidate_trial.probes = false;  // the candidate never computes (or sees) probes
    // Both sides at once where the config allows: separate processes, and
    // neither sees the other's outputs.
    TrialResult want, got;
    RunnerEvent event, candidate_event;
    if (config.concurrent_sides) {
      std::thread reference_call([&] { event = reference->Trial(trial, per_call, &want); });
      candidate_event = candidate->Trial(candidate_trial, per_call, &got);
      reference_call.join();
    } else {
      event = reference->Trial(trial, per_call, &want);
    }
    if (!event.ok) {
      side_failed(Side::kReference, trial.label, event);
      break;
    }
    if (trial.alternative && !AllFinite(want.outputs)) {
      report.add_messages(absl::StrCat(trial.label, ": skipped (the reference is not finite there)"));
      continue;
    }
    if (!config.concurrent_sides) candidate_event = candidate->Trial(candidate_trial, per_call, &got);
    answered();
    if (report.trials() == 0) {
      report.add_messages(ToleranceLine(task, config.tolerance, want.outputs));
    }
    event = candidate_event;
    report.set_trials(report.trials() + 1);
    if (!event.ok) {
      side_failed(Side::kCandidate, trial.label, event);
      break;
    }
    if (!got.violation.empty()) {
      finish(got.violation_verdict, absl::StrCat(trial.label, ": ", got.violation));
      break;
    }
    if (got.aliases_input && !want.aliases_input) {
      finish(v1::VERDICT_WRONG_ANSWER,
             absl::StrCat(trial.label,
                          ": an output shares storage with an input (the reference's does not)"));
      break;
    }
    if (got.reuses_output >= 0 && want.reuses_output < 0) {
      const std::string what = absl::StrCat(
          "output ", got.reuses_output,
          " is the memory the candidate's previous call returned: it reuses one output buffer across calls, so "
          "each call overwrites the result a caller still holds from the one before");
      if (!config.reused_output_as_flag) {
        finish(v1::VERDICT_WRONG_ANSWER, absl::StrCat(trial.label, ": ", what));
        break;
      }
      if (std::find(out.flags.begin(), out.flags.end(), v1::FLAG_WRITE_AFTER_RETURN) == out.flags.end()) {
        out.flags.push_back(v1::FLAG_WRITE_AFTER_RETURN);
        out.flag_evidence.push_back(what);
      }
    }
    for (const auto& f : got.global_flags) {
      if (std::find(global_flags.begin(), global_flags.end(), f) == global_flags.end()) {
        global_flags.push_back(f);
      }
    }
    if (std::string m = CompareOutputs(task, config.tolerance, got.outputs, want.outputs, &report);
        !m.empty()) {
      finish(v1::VERDICT_WRONG_ANSWER, absl::StrCat(trial.label, ": ", m));
      break;
    }
    report.set_trials_passed(report.trials_passed() + 1);
    if (trial.probe_eligible && probe && want.outputs.size() == 1) {
      ++probe_trials;
      RecordProbes(task, config, &want, got, /*keep_reference=*/!have_first, &previous_reference, &out);
    }
    if (!have_first) {
      have_first = true;
      first_reference = std::move(want.outputs);
      first_candidate = std::move(got.outputs);
      first_trial = candidate_trial;
    }
  }
  if (out.verdict != v1::VERDICT_UNSPECIFIED) {
    if (ended) return context.Check();
    return out;
  }
  if (probe_trials > 0) ConcludeProbes(&out);

  // Determinism: the first trial again on fresh allocations.
  first_trial.rerun = true;
  for (int r = 0; r < config.determinism_reruns && have_first; ++r) {
    CRL_RETURN_IF_ERROR(next_call());
    const std::string where = absl::StrCat("determinism re-run ", r + 1, " of trial 1");
    TrialResult again;
    RunnerEvent event = candidate->Trial(first_trial, per_call, &again);
    answered();
    if (!event.ok) {
      side_failed(Side::kCandidate, where, event);
      break;
    }
    if (std::string m = RerunDiffers(task, config, again.outputs, first_candidate, first_reference, where, &report);
        !m.empty()) {
      finish(v1::VERDICT_WRONG_ANSWER, m);
      break;
    }
  }
  if (out.verdict != v1::VERDICT_UNSPECIFIED) {
    if (ended) return context.Check();
    return out;
  }

  if (!global_flags.empty()) {
    out.flags.push_back(v1::FLAG_GLOBAL_FLAGS);
    out.flag_evidence.push_back(absl::StrCat("candidate changed global torch settings: ",
                                             absl::StrJoin(global_flags, "; ")));
  }
  if (!out.custom_kernel) {
    out.flags.push_back(v1::FLAG_NO_CUSTOM_KERNEL);
    out.flag_evidence.push_back("pure PyTorch: the candidate compiled no kernel of its own");
  }
  // Both sides stay up: the caller ends them, or keeps them for timing.
  finish(v1::VERDICT_OK, "");
  return out;
}

}  // namespace crl
