#include "services/worker/pair_loop.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "lib/stats/stats.h"
#include "runner/inputs.h"

namespace crl {

absl::Status ValidatePairRequest(const v1::MeasurePairRequest& request) {
  if (request.candidate_artifact_id().empty()) {
    return absl::InvalidArgumentError("candidate_artifact_id: empty");
  }
  if (request.min_pairs() < 0 || request.max_pairs() < 0 || request.max_pairs() > 100000 ||
      request.block_size() < 0 || request.warmup() < 0 || request.warmup() > 10000 ||
      request.budget_seconds() < 0 || request.target_rel_ci() < 0 ||
      request.check_outputs_every() < 0) {
    return absl::InvalidArgumentError("measure pair limits: negative or too large");
  }
  return absl::OkStatus();
}

PairLoop::PairLoop(const v1::MeasurePairRequest& request, uint64_t seed, ClockInterface* clock)
    : warmup_(request.warmup() > 0 ? request.warmup() : 5),
      min_pairs_(request.min_pairs() > 0 ? request.min_pairs() : 20),
      max_pairs_(std::max(min_pairs_, request.max_pairs() > 0 ? request.max_pairs() : 400)),
      block_(request.block_size() > 0 ? request.block_size() : 5),
      check_every_(request.check_outputs_every() > 0 ? request.check_outputs_every() : 5),
      target_(request.target_rel_ci() > 0 ? request.target_rel_ci() : 0.01),
      budget_(request.budget_seconds() > 0 ? request.budget_seconds() : 30),
      seed_(seed),
      clock_(clock) {}

bool PairLoop::Run(const TimedFn& timed, const CheckFn& check,
                   v1::MeasurePairResponse* response) const {
  uint64_t order_state = seed_ ^ 0x5DEECE66Dull;
  v1::TimingSample sample;
  double outside = 0;
  for (int i = 0; i < warmup_; ++i) {
    uint64_t s = runner::DeriveSeed(seed_, 2000000 + i);
    if (!timed(true, s, false, &sample, &outside)) return false;
    if (!timed(false, s, false, &sample, &outside)) return false;
  }
  const stats::StoppingRule rule{target_, min_pairs_, 200};
  std::vector<double> ref_t, cand_t;
  const absl::Time loop_start = clock_->MonotonicNow();
  int pairs = 0;
  while (pairs < max_pairs_) {
    const bool ref_first = runner::SplitMix64(&order_state) & 1;
    for (int b = 0; b < block_ && pairs < max_pairs_; ++b, ++pairs) {
      const uint64_t s = runner::DeriveSeed(seed_, pairs);
      const bool checked = pairs % check_every_ == 0;
      v1::TimingSample samples[2];
      double outsides[2] = {0, 0};
      for (int side = 0; side < 2; ++side) {
        const bool is_ref = (side == 0) == ref_first;
        if (!timed(is_ref, s, checked, &samples[is_ref ? 0 : 1], &outsides[is_ref ? 0 : 1])) {
          return false;
        }
      }
      *response->add_reference_samples() = samples[0];
      response->add_reference_outside_seconds(outsides[0]);
      *response->add_candidate_samples() = samples[1];
      response->add_candidate_outside_seconds(outsides[1]);
      ref_t.push_back(samples[0].device_sync_seconds());
      cand_t.push_back(samples[1].device_sync_seconds());
      if (checked) {
        // Same seed, same inputs: the timed outputs must agree as in verification.
        response->set_output_checks(response->output_checks() + 1);
        if (std::string mismatch = check(pairs); !mismatch.empty()) {
          response->set_output_mismatches(response->output_mismatches() + 1);
          if (response->output_mismatch_detail().empty()) {
            response->set_output_mismatch_detail(absl::StrCat("pair ", pairs, ": ", mismatch));
          }
        }
      }
    }
    if (absl::ToDoubleSeconds(clock_->MonotonicNow() - loop_start) > budget_) break;
    if (stats::ShouldStop(rule, ref_t, cand_t, seed_ + pairs)) {
      response->set_converged(true);
      break;
    }
  }
  response->set_elapsed_seconds(absl::ToDoubleSeconds(clock_->MonotonicNow() - loop_start));
  return true;
}

}  // namespace crl
