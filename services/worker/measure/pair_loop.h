// The adaptive, interleaved timing loop of MeasurePair: warm-up, blocks of
// pairs in a random side order on identical inputs, output checks of one
// pair in every N (drawn from a secret the sides never see), stop at the CI
// target (lib/stats StoppingRule) or the budget; short calls timed in
// batches of back-to-back calls on distinct inputs.
// Format-free: the sides are callbacks.
#ifndef CRL_SERVICES_WORKER_MEASURE_PAIR_LOOP_H_
#define CRL_SERVICES_WORKER_MEASURE_PAIR_LOOP_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "common/clock.h"
#include "crl/v1/eval.pb.h"
#include "services/worker/formats/task_format.h"

namespace crl {

// INVALID_ARGUMENT for negative or absurd limits.
absl::Status ValidatePairRequest(const v1::MeasurePairRequest& request);

// Calls per timed sample: enough back-to-back calls that the reference's
// sample lasts `min_sample_seconds`, at most `max_calls`, and at most 1 GiB
// of inputs and outputs held at once (`call_bytes` per call; 0: unknown, one
// call). Exposed for tests.
int CallsPerSample(double ref_call_seconds, int64_t call_bytes, double min_sample_seconds, int max_calls);

class PairLoop {
 public:
  // Zero request fields take the defaults of eval.proto; the default sample
  // length depends on `gpu` (10 ms on a GPU; 5 ms on the host, whose staged
  // round trip is a few tenths of a millisecond). `clock`
  // measures the budget and must outlive the loop. The inputs' seeds and
  // the sides' order derive from `seed`; which pair of each check_every
  // is checked, which call of its batch and at which positions derive from
  // `check_secret` alone. A side sees its inputs' seeds and can invert them
  // (runner::DeriveSeed is a bijection), so nothing it sees may tell it
  // which of its outputs will be compared.
  PairLoop(const v1::MeasurePairRequest& request, uint64_t seed, uint64_t check_secret, ClockInterface* clock,
           bool gpu = true);

  // One timed sample asked of one side: `calls` back-to-back calls on
  // inputs derived from `seed`; `check` asks the side to keep their outputs
  // for CheckFn; `graph` asks for a replay of a CUDA graph of the calls.
  struct Ask {
    bool is_ref = false;
    uint64_t seed = 0;
    int calls = 1;
    bool check = false;
    bool graph = false;
  };
  // What the side returned: its times over all `calls` (the loop divides
  // them), the worker's own wall time around it, the bytes one call holds
  // (inputs and outputs) as the side reports them (the reference's size the
  // batches), and whether the sample was a graph replay (and if not, why).
  struct Timed {
    v1::TimingSample sample;
    double outside_seconds = 0;
    int64_t call_bytes = 0;
    bool graph = false;
    std::string graph_error;
  };
  // False when the call failed (the caller has already recorded why).
  using TimedFn = std::function<bool(const Ask& ask, Timed* out)>;
  // After both sides of a checked pair: "" when the outputs of call `call`
  // (0-based, drawn at random after both returned) agree, compared at the
  // positions `sample` draws (also drawn after both returned).
  using CheckFn = std::function<std::string(int pair, int call, const OutputSample& sample)>;
  // Appends per-call samples and checks to `response`; false when a call
  // failed. On a GPU (unless the request says eager_timing) the warm-up's
  // last pair asks both sides for graphs, and the loop replays them
  // (`timing_mode` "graph"). When a side could not be captured, Run returns
  // true right after that pair with `graph_fallback` saying why and
  // `timing_mode` empty: the attempt may have left that process in any
  // state, so the caller measures again with fresh sides and eager_timing.
  bool Run(const TimedFn& timed, const CheckFn& check, v1::MeasurePairResponse* response) const;
  // Wall budget for a session that lives through the whole loop.
  double SessionBudget(double per_call_seconds) const {
    return budget_ + per_call_seconds * (2 * warmup_ + 4 * block_) + 120;
  }

 private:
  const int warmup_, min_pairs_, max_pairs_, block_, check_every_;
  const int64_t checked_elements_;
  const double target_, budget_, min_sample_;
  const int max_calls_;
  const bool want_graph_;
  const uint64_t seed_, check_secret_;
  ClockInterface* clock_;
};

}  // namespace crl

#endif  // CRL_SERVICES_WORKER_MEASURE_PAIR_LOOP_H_
