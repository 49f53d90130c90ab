#include "services/worker/measure/pair_loop.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "lib/stats/stats.h"
#include "runner/inputs.h"
#include "services/worker/worker_client.h"

namespace crl {

absl::Status ValidatePairRequest(const v1::MeasurePairRequest& request) {
  if (request.candidate_artifact_id().empty()) {
    return absl::InvalidArgumentError("candidate_artifact_id: empty");
  }
  if (request.min_pairs() < 0 || request.max_pairs() < 0 || request.max_pairs() > 100000 ||
      request.block_size() < 0 || request.warmup() < 0 || request.warmup() > 10000 ||
      request.budget_seconds() < 0 || request.target_rel_ci() < 0 ||
      request.check_outputs_every() < 0 || request.checked_elements() < 0 ||
      request.max_calls_per_sample() < 0 || request.max_calls_per_sample() > 4096) {
    return absl::InvalidArgumentError("measure pair limits: negative or too large");
  }
  return absl::OkStatus();
}

PairLoop::PairLoop(const v1::MeasurePairRequest& request, uint64_t seed, uint64_t check_secret,
                   ClockInterface* clock, bool gpu)
    : warmup_(request.warmup() > 0 ? request.warmup() : 5),
      min_pairs_(request.min_pairs() > 0 ? request.min_pairs() : 20),
      max_pairs_(std::max(min_pairs_, request.max_pairs() > 0 ? request.max_pairs() : kDefaultMaxPairs)),
      block_(request.block_size() > 0 ? request.block_size() : 5),
      check_every_(request.check_outputs_every() > 0 ? request.check_outputs_every() : 5),
      checked_elements_(request.checked_elements() > 0 ? request.checked_elements() : int64_t{1} << 20),
      target_(request.target_rel_ci() > 0 ? request.target_rel_ci() : 0.01),
      budget_(request.budget_seconds() > 0 ? request.budget_seconds() : 30),
      min_sample_(request.min_sample_seconds() != 0 ? request.min_sample_seconds() : (gpu ? 1e-2 : 5e-3)),
      max_calls_(request.max_calls_per_sample() > 0 ? request.max_calls_per_sample() : 256),
      want_graph_(gpu && !request.eager_timing()),
      seed_(seed),
      check_secret_(check_secret),
      clock_(clock) {}

int CallsPerSample(double ref_call_seconds, int64_t call_bytes, double min_sample_seconds, int max_calls) {
  if (min_sample_seconds <= 0 || call_bytes <= 0 || !(ref_call_seconds > 0)) return 1;
  constexpr double kMaxBatchBytes = double(int64_t{1} << 30);
  double calls = std::ceil(min_sample_seconds / ref_call_seconds);
  calls = std::min({calls, static_cast<double>(max_calls), std::floor(kMaxBatchBytes / call_bytes)});
  return std::max(1, static_cast<int>(calls));
}

bool PairLoop::Run(const TimedFn& timed, const CheckFn& check,
                   v1::MeasurePairResponse* response) const {
  uint64_t order_state = seed_ ^ 0x5DEECE66Dull;
  Timed t;
  std::vector<double> warm_ref;
  int64_t call_bytes = 0;
  for (int i = 0; i < warmup_; ++i) {
    uint64_t s = runner::DeriveSeed(seed_, 2000000 + i);
    if (!timed({true, s, 1, false, false}, &t)) return false;
    warm_ref.push_back(t.sample.device_sync_seconds());
    call_bytes = t.call_bytes;
    if (!timed({false, s, 1, false, false}, &t)) return false;
  }
  // The batch size follows from the reference's warm calls: the fastest of
  // the later half (the first calls may still carry one-time costs, and a
  // call that is still warming up would size batches too small), then one
  // more warm-up pair at that size.
  double ref_call = 0;
  if (!warm_ref.empty()) {
    ref_call = *std::min_element(warm_ref.begin() + warm_ref.size() / 2, warm_ref.end());
  }
  int calls = CallsPerSample(ref_call, call_bytes, min_sample_, max_calls_);
  // Warm-up pairs at that size; where graphs are wanted, they are the ones
  // that capture them, and the loop replays only if both sides could.
  // A single call's time also holds the round trip of a whole sample, so a
  // short call sizes batches too small: the reference's batch, whose round
  // trip its calls share, sizes them again (at most kResizes times, only
  // ever larger) towards samples of min_sample_seconds.
  constexpr int kResizes = 2;
  bool graph = false;
  if (calls > 1 || want_graph_) {
    Timed probe[2];
    for (int resize = 0;; ++resize) {
      // Two pairs at each size: the first batch of a size still grows the
      // sides' heaps (and captures their graphs); the second sizes. A side
      // whose capture failed is asked for no other (a failed capture can
      // leave its stream unusable): the loop falls back below.
      bool captured = true;
      for (int rep = 0; rep < 2 && captured; ++rep) {
        const uint64_t s = runner::DeriveSeed(seed_, 2000000 + warmup_ + 2 * resize + rep);
        for (int side = 0; side < 2; ++side) {
          if (!timed({side == 0, s, calls, false, want_graph_}, &probe[side])) return false;
        }
        captured = !want_graph_ || (probe[0].graph && probe[1].graph);
      }
      if (!captured) break;
      const int again = CallsPerSample(probe[0].sample.device_sync_seconds() / calls, call_bytes, min_sample_,
                                       max_calls_);
      if (resize == kResizes || again <= calls) break;
      calls = again;
    }
    graph = want_graph_ && probe[0].graph && probe[1].graph;
    if (want_graph_ && !graph) {
      std::string why;
      for (int side = 0; side < 2; ++side) {
        if (probe[side].graph) continue;
        absl::StrAppend(&why, why.empty() ? "" : "; ", side == 0 ? "reference: " : "candidate: ",
                        probe[side].graph_error.empty() ? "its format times calls as launched"
                                                        : probe[side].graph_error);
      }
      response->set_calls_per_sample(calls);
      response->set_graph_fallback(why);
      return true;  // the caller measures again, as launched, with fresh sides
    }
  }
  response->set_calls_per_sample(calls);
  response->set_timing_mode(graph ? "graph" : "eager");
  auto per_call = [calls](Timed* x) {
    v1::TimingSample& s = x->sample;
    s.set_stream_event_seconds(s.stream_event_seconds() / calls);
    s.set_device_sync_seconds(s.device_sync_seconds() / calls);
    s.set_host_seconds(s.host_seconds() / calls);
    x->outside_seconds /= calls;
  };
  const stats::StoppingRule rule{target_, min_pairs_, 200};
  std::vector<double> ref_t, cand_t;
  const absl::Time loop_start = clock_->MonotonicNow();
  uint64_t check_state = check_secret_ ^ 0x2545F4914F6CDD1Dull;
  int checked_pair = -1;  // the pair of the current group of check_every_ that is checked
  int pairs = 0;
  while (pairs < max_pairs_) {
    const bool ref_first = runner::SplitMix64(&order_state) & 1;
    for (int b = 0; b < block_ && pairs < max_pairs_; ++b, ++pairs) {
      const uint64_t s = runner::DeriveSeed(seed_, pairs);
      if (pairs % check_every_ == 0) {
        checked_pair = pairs + static_cast<int>(runner::SplitMix64(&check_state) % check_every_);
      }
      const bool checked = pairs == checked_pair;
      Timed sides[2];
      for (int side = 0; side < 2; ++side) {
        const bool is_ref = (side == 0) == ref_first;
        Timed* x = &sides[is_ref ? 0 : 1];
        if (!timed({is_ref, s, calls, checked, graph}, x)) return false;
        if (graph && !x->graph) {
          // Only a process whose harness was tampered with stops replaying.
          response->set_verdict(is_ref ? v1::VERDICT_INFRA_ERROR : v1::VERDICT_SANDBOX_VIOLATION);
          response->add_messages(absl::StrCat(is_ref ? "reference" : "candidate",
                                              ": stopped replaying its CUDA graph during the measurement"));
          return false;
        }
        per_call(x);
      }
      *response->add_reference_samples() = sides[0].sample;
      response->add_reference_outside_seconds(sides[0].outside_seconds);
      *response->add_candidate_samples() = sides[1].sample;
      response->add_candidate_outside_seconds(sides[1].outside_seconds);
      ref_t.push_back(sides[0].sample.device_sync_seconds());
      cand_t.push_back(sides[1].sample.device_sync_seconds());
      if (checked) {
        // Same seed, same inputs: the timed outputs must agree as in
        // verification. Which call of the batch is compared, and at which
        // positions of a large output, is drawn now, after both returned.
        const int call = static_cast<int>(runner::SplitMix64(&check_state) % static_cast<uint64_t>(calls));
        const OutputSample sample{runner::SplitMix64(&check_state), checked_elements_};
        response->set_output_checks(response->output_checks() + 1);
        if (std::string mismatch = check(pairs, call, sample); !mismatch.empty()) {
          response->set_output_mismatches(response->output_mismatches() + 1);
          if (response->output_mismatch_detail().empty()) {
            response->set_output_mismatch_detail(
                calls > 1 ? absl::StrCat("pair ", pairs, ", call ", call + 1, " of ", calls, ": ", mismatch)
                          : absl::StrCat("pair ", pairs, ": ", mismatch));
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
