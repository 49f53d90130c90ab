#include "services/worker/verifier.h"

#include <algorithm>
#include <random>

#include "absl/strings/str_cat.h"
#include "runner/inputs.h"
#include "services/worker/compare.h"

namespace crl {
namespace {

struct Trial {
  size_t size_set = 0;
  size_t distribution = 0;  // each input uses distributions[d % its count]
  uint64_t seed = 0;
};

size_t MaxDistributions(const NativeTask& task) {
  size_t m = 1;
  for (const auto& in : task.inputs) m = std::max(m, in.distributions.size());
  return m;
}

}  // namespace

SeedSource SecureSeedSource() {
  return [] {
    std::random_device rd;  // /dev/urandom on Linux
    return (uint64_t{rd()} << 32) ^ rd();
  };
}

VerifyResult VerifyCandidate(const NativeTask& task, const Lane& lane,
                             const std::string& reference_library,
                             const std::string& candidate_library, const RunnerOptions& runner,
                             const VerifyConfig& config, const SeedSource& seeds) {
  VerifyResult out;
  v1::CorrectnessReport& report = out.report;
  report.set_first_mismatch_index(-1);
  auto finish = [&](v1::Verdict v, const std::string& message) {
    out.verdict = v;
    if (!message.empty()) report.add_messages(message);
    return out;
  };

  // Plan: every (size set, distribution) pair at least once.
  const std::vector<SizeSet> sets = task.AllSizeSets();
  const size_t dists = MaxDistributions(task);
  const int needed = static_cast<int>(sets.size() * dists);
  const int trials = std::min(16, std::max(config.trials, needed));
  std::vector<Trial> plan;
  // Trials of one size set run back to back with different data: the
  // allocator then tends to hand out the same addresses again, which exposes
  // results cached by pointer or shape.
  for (int t = 0; t < trials; ++t) {
    plan.push_back({t * sets.size() / trials, 0, seeds()});
  }
  for (size_t t = 0, within = 0; t < plan.size(); ++t) {
    within = (t > 0 && plan[t].size_set == plan[t - 1].size_set) ? within + 1 : 0;
    plan[t].distribution = within % dists;
  }

  const double per_call = config.call_timeout_seconds;
  const double budget = per_call * (2 * trials + config.determinism_reruns + 2) + 60;
  RunnerEvent event;
  auto reference = RunnerSession::Start(runner, lane, reference_library, budget, &event);
  if (!reference) {
    return finish(v1::VERDICT_INFRA_ERROR, absl::StrCat("reference runner: ", event.message));
  }
  auto candidate = RunnerSession::Start(runner, lane, candidate_library, budget, &event);
  if (!candidate) return finish(event.verdict, absl::StrCat("candidate: ", event.message));
  out.device_name = candidate->device_name();

  const std::vector<double> scalars = task.ScalarValues();
  std::vector<std::string> first_outputs;  // trial 0, for the determinism check
  runner::CallRequest first_request;
  for (size_t t = 0; t < plan.size(); ++t) {
    const Trial& trial = plan[t];
    const SizeSet& sizes = sets[trial.size_set];
    auto in_specs = task.InputSpecs(sizes);
    auto out_specs = task.OutputSpecs(sizes);
    if (!in_specs.ok() || !out_specs.ok()) {
      return finish(v1::VERDICT_INFRA_ERROR, "task shapes failed to evaluate");
    }
    runner::CallRequest request;
    request.call_id = t + 1;
    request.inputs = *in_specs;
    request.outputs = *out_specs;
    request.scalars = scalars;
    for (size_t i = 0; i < task.inputs.size(); ++i) {
      const TensorDecl& decl = task.inputs[i];
      int64_t numel = 0;
      runner::SpecNumel(request.inputs[i], &numel);
      const auto& d = decl.distributions[trial.distribution % decl.distributions.size()];
      request.input_data.push_back(
          runner::Generate(d, decl.dtype, numel, runner::DeriveSeed(trial.seed, i)));
    }
    const std::string where = absl::StrCat("trial ", t + 1, "/", plan.size(), " (size set ",
                                           trial.size_set, ", distribution ",
                                           trial.distribution, ")");

    runner::CallResult want;
    request.return_inputs = false;
    event = reference->Call(request, per_call, &want);
    if (!event.ok || want.status != runner::kOk) {
      return finish(v1::VERDICT_INFRA_ERROR,
                    absl::StrCat("reference failed on ", where, ": ",
                                 event.ok ? want.error : event.message));
    }
    runner::CallResult got;
    request.return_inputs = true;
    // Within a size set, the candidate gets the previous call's buffers back,
    // refilled: new data at an old address must still give the new answer.
    request.reuse_buffers = t > 0 && plan[t - 1].size_set == trial.size_set;
    event = candidate->Call(request, per_call, &got);
    report.set_trials(static_cast<int>(t + 1));
    if (!event.ok) return finish(event.verdict, absl::StrCat(where, ": ", event.message));
    if (got.status != runner::kOk) {
      return finish(VerdictForResult(got.status, got.error),
                    absl::StrCat(where, ": ", runner::RunStatusName(got.status), ": ", got.error));
    }
    // Work must be finished when crl_run returns. A host candidate that
    // leaves a thread behind is finishing (or faking) work off the clock.
    // (CUDA libraries start helper threads of their own, so host only.)
    if (lane.backend == BackendKind::kHost && got.threads_after > got.threads_before) {
      return finish(v1::VERDICT_SANDBOX_VIOLATION,
                    absl::StrCat(where, ": left ", got.threads_after - got.threads_before,
                                 " thread(s) running after crl_run returned"));
    }
    if (got.output_data.size() != request.outputs.size() ||
        got.input_data_after.size() != request.inputs.size()) {
      return finish(v1::VERDICT_WRONG_ANSWER, absl::StrCat(where, ": wrong number of tensors"));
    }
    for (size_t i = 0; i < request.inputs.size(); ++i) {
      if (got.input_data_after[i] != request.input_data[i]) {
        return finish(v1::VERDICT_WRONG_ANSWER,
                      absl::StrCat(where, ": input '", request.inputs[i].name,
                                   "' was modified by the candidate"));
      }
    }
    bool trial_ok = true;
    for (size_t o = 0; o < request.outputs.size(); ++o) {
      Tolerance tol = task.ToleranceFor(request.outputs[o].dtype);
      if (config.atol > 0) tol.atol = config.atol;
      if (config.rtol > 0) tol.rtol = config.rtol;
      CompareResult c = CompareTensor(request.outputs[o], got.output_data[o],
                                      want.output_data[o], tol);
      report.set_max_abs_error(std::max(report.max_abs_error(), c.max_abs_error));
      report.set_max_rel_error(std::max(report.max_rel_error(), c.max_rel_error));
      if (c.kind != CompareResult::kMatch && trial_ok) {
        trial_ok = false;
        report.set_mismatch_count(c.mismatches);
        report.set_first_mismatch_index(c.first_index);
        report.set_first_mismatch_output(request.outputs[o].name);
        report.add_messages(absl::StrCat(where, ": ", c.detail));
      }
    }
    if (!trial_ok) return finish(v1::VERDICT_WRONG_ANSWER, "");
    report.set_trials_passed(report.trials_passed() + 1);
    if (t == 0) {
      first_outputs = std::move(got.output_data);
      first_request = std::move(request);
    }
  }

  // Determinism: the first trial again, fresh allocations, same bytes out.
  for (int r = 0; r < config.determinism_reruns; ++r) {
    runner::CallResult again;
    first_request.call_id = 1000 + r;
    first_request.return_inputs = false;
    first_request.reuse_buffers = false;
    event = candidate->Call(first_request, per_call, &again);
    if (!event.ok) return finish(event.verdict, absl::StrCat("determinism re-run: ", event.message));
    if (again.status != runner::kOk) {
      return finish(VerdictForResult(again.status, again.error),
                    absl::StrCat("determinism re-run: ", again.error));
    }
    if (again.output_data != first_outputs) {
      return finish(v1::VERDICT_WRONG_ANSWER,
                    "non-deterministic: re-running trial 1 on fresh buffers changed the output");
    }
  }
  candidate->Close();
  reference->Close();
  return finish(v1::VERDICT_OK, "");
}

}  // namespace crl
