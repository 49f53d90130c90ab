// Rewards: pure functions from (verdict, speedup, flags) to a reward, with a
// typed status that keeps infrastructure failures and unreviewed trust flags
// out of training. docs/timing.md, "Rewards".
#ifndef CRL_LIB_REWARD_REWARDS_H_
#define CRL_LIB_REWARD_REWARDS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "crl/v1/timing.pb.h"

namespace crl::reward {

struct RewardParams {
  // CUDA-L1 preset: rewards (and group-normalized advantages) are clipped to [-k, k].
  double clip_k = 3.0;
  // CUDA-L1 preset: reward of an incorrect candidate (compiles but wrong,
  // crashes, times out, or does not compile).
  double incorrect_reward = -1.0;
  // Speedup-with-bonus preset: bonus for being correct, and the speedup cap.
  double correctness_bonus = 0.3;
  double speedup_cap = 10.0;
};

struct RewardInput {
  v1::Verdict verdict = v1::VERDICT_UNSPECIFIED;
  // ref_seconds / candidate_seconds; meaningful only for VERDICT_OK.
  double speedup = 0;
  std::vector<v1::Flag> flags;
  // The speedup's 95% interval (0: unknown).
  double ci_low = 0, ci_high = 0;
};

// The speedup a NOISY measurement is rewarded at: the end of its interval
// nearest 1 (ci_low when the whole interval is above 1, ci_high when it is
// below, else 1). Noise can only pull a reward toward "no change": an honest
// candidate on a noisy machine keeps a reward it has evidence for, and
// jitter gains a candidate nothing. 0 when the interval is unknown.
double ConservativeSpeedup(const RewardInput& input);

// The reward of one candidate under a preset:
//  * INFRA_ERROR or an unspecified verdict -> REWARD_STATUS_INFRA_RETRY (no reward);
//  * any flag that says the candidate may cheat (IsHonestyFlag in
//    lib/reward/names.h) -> REWARD_STATUS_WITHHELD (no reward until a person
//    clears it); NOISY alone (the measurement was imprecise) is rewarded at
//    ConservativeSpeedup, or withheld when the interval is unknown;
//  * otherwise REWARD_STATUS_OK with the preset's value:
//      CUDA_L1:        correct: clip(speedup - 1, -k, k); incorrect: incorrect_reward
//      SPEEDUP_BONUS:  correct: bonus + min(speedup, cap); incorrect: 0
//      TIERED:         incorrect -1, correct but slower 0.1, within 5% 0.3,
//                      up to 2x 0.6, above 2x 1.0
// A non-finite or non-positive speedup on an OK verdict is an infrastructure
// problem (nothing was measured), never a reward.
v1::RewardResult ComputeReward(const RewardInput& input, v1::RewardPreset preset,
                               const RewardParams& params = {});

// The parameters an API message gives (defaults where a field is absent).
RewardParams ParamsFrom(const v1::RewardParams& message);
// INVALID_ARGUMENT naming the field unless clip and cap are positive and
// every parameter finite (a run spec's are checked on submit; a
// ComputeReward request's by the service).
absl::Status ValidateRewardParams(const v1::RewardParams& message);

// The same for an API request (TimingService.ComputeReward, a run's
// scorer), with the request's parameters.
v1::RewardResult ComputeReward(const v1::ComputeRewardRequest& request);

}  // namespace crl::reward

#endif  // CRL_LIB_REWARD_REWARDS_H_
