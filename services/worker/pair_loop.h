// The adaptive, interleaved timing loop of MeasurePair: warm-up, blocks of
// pairs in a random side order on identical inputs, output checks every
// Nth pair, stop at the CI target (lib/stats StoppingRule) or the budget.
// Format-free: the sides are callbacks.
#ifndef CRL_SERVICES_WORKER_PAIR_LOOP_H_
#define CRL_SERVICES_WORKER_PAIR_LOOP_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "common/clock.h"
#include "crl/v1/eval.pb.h"

namespace crl {

// INVALID_ARGUMENT for negative or absurd limits.
absl::Status ValidatePairRequest(const v1::MeasurePairRequest& request);

class PairLoop {
 public:
  // Zero request fields take the defaults of eval.proto. `clock` measures
  // the budget and must outlive the loop.
  PairLoop(const v1::MeasurePairRequest& request, uint64_t seed, ClockInterface* clock);

  // One timed call of one side on inputs from `seed`; `check` asks the side
  // to keep its outputs for CheckFn. False when the call failed (the caller
  // has already recorded why).
  using TimedFn = std::function<bool(bool is_ref, uint64_t seed, bool check,
                                     v1::TimingSample* sample, double* outside_seconds)>;
  // After both sides of a checked pair: "" when the outputs agree.
  using CheckFn = std::function<std::string(int pair)>;
  // Appends samples and checks to `response`; false when a call failed.
  bool Run(const TimedFn& timed, const CheckFn& check, v1::MeasurePairResponse* response) const;
  // Wall budget for a session that lives through the whole loop.
  double SessionBudget(double per_call_seconds) const {
    return budget_ + per_call_seconds * (2 * warmup_ + 4 * block_) + 120;
  }

 private:
  const int warmup_, min_pairs_, max_pairs_, block_, check_every_;
  const double target_, budget_;
  const uint64_t seed_;
  ClockInterface* clock_;
};

}  // namespace crl

#endif  // CRL_SERVICES_WORKER_PAIR_LOOP_H_
