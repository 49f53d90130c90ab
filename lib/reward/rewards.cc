#include "lib/reward/rewards.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "lib/reward/names.h"

namespace crl::reward {

v1::RewardResult ComputeReward(const RewardInput& in, v1::RewardPreset preset,
                               const RewardParams& p) {
  v1::RewardResult r;
  if (in.verdict == v1::VERDICT_INFRA_ERROR || in.verdict == v1::VERDICT_UNSPECIFIED) {
    r.set_status(v1::REWARD_STATUS_INFRA_RETRY);
    r.set_explanation("infrastructure failure: retry the evaluation; no reward");
    return r;
  }
  bool noisy = false;
  for (v1::Flag f : in.flags) {
    noisy = noisy || f == v1::FLAG_NOISY;
    if (IsHonestyFlag(f) || (f == v1::FLAG_NOISY && ConservativeSpeedup(in) <= 0)) {
      r.set_status(v1::REWARD_STATUS_WITHHELD);
      r.set_explanation(absl::StrCat("withheld: ", v1::Flag_Name(f), " raised and not cleared"));
      return r;
    }
  }
  const bool correct = in.verdict == v1::VERDICT_OK;
  if (correct && noisy) {
    RewardInput conservative = in;
    conservative.speedup = ConservativeSpeedup(in);
    conservative.flags.clear();
    v1::RewardResult c = ComputeReward(conservative, preset, p);
    c.set_explanation(absl::StrCat("noisy measurement: rewarded at ", conservative.speedup, " (its interval [",
                                   in.ci_low, ", ", in.ci_high, "], the end nearest 1), not ", in.speedup));
    return c;
  }
  if (correct && !(std::isfinite(in.speedup) && in.speedup > 0)) {
    r.set_status(v1::REWARD_STATUS_INFRA_RETRY);
    r.set_explanation("correct but no valid speedup was measured; no reward");
    return r;
  }
  r.set_status(v1::REWARD_STATUS_OK);
  double value = 0;
  switch (preset) {
    case v1::REWARD_PRESET_CUDA_L1:
    case v1::REWARD_PRESET_UNSPECIFIED:
      value = correct ? std::max(-p.clip_k, std::min(p.clip_k, in.speedup - 1)) : p.incorrect_reward;
      break;
    case v1::REWARD_PRESET_SPEEDUP_BONUS:
      value = correct ? p.correctness_bonus + std::min(in.speedup, p.speedup_cap) : 0;
      break;
    case v1::REWARD_PRESET_TIERED:
      if (!correct) value = -1;
      else if (in.speedup < 0.95) value = 0.1;
      else if (in.speedup <= 1.05) value = 0.3;
      else if (in.speedup <= 2) value = 0.6;
      else value = 1.0;
      break;
    default:
      r.set_status(v1::REWARD_STATUS_INFRA_RETRY);
      r.set_explanation("unknown reward preset");
      return r;
  }
  r.set_reward(value);
  r.set_explanation(correct ? absl::StrCat("correct, speedup ", in.speedup)
                            : absl::StrCat("incorrect: ", v1::Verdict_Name(in.verdict)));
  return r;
}

double ConservativeSpeedup(const RewardInput& in) {
  if (!(in.ci_low > 0 && in.ci_high >= in.ci_low && std::isfinite(in.ci_high))) return 0;
  if (in.ci_low > 1) return in.ci_low;
  if (in.ci_high < 1) return in.ci_high;
  return 1;
}

RewardParams ParamsFrom(const v1::RewardParams& m) {
  RewardParams p;
  if (m.has_clip()) p.clip_k = m.clip();
  if (m.has_incorrect_reward()) p.incorrect_reward = m.incorrect_reward();
  if (m.has_correctness_bonus()) p.correctness_bonus = m.correctness_bonus();
  if (m.has_speedup_cap()) p.speedup_cap = m.speedup_cap();
  return p;
}

absl::Status ValidateRewardParams(const v1::RewardParams& m) {
  if (m.has_clip() && !(m.clip() > 0 && std::isfinite(m.clip()))) {
    return absl::InvalidArgumentError(absl::StrCat("reward.clip: must be positive and finite, not ", m.clip()));
  }
  if (m.has_speedup_cap() && !(m.speedup_cap() > 0 && std::isfinite(m.speedup_cap()))) {
    return absl::InvalidArgumentError(absl::StrCat("reward.cap: must be positive and finite, not ", m.speedup_cap()));
  }
  if (m.has_incorrect_reward() && !std::isfinite(m.incorrect_reward())) {
    return absl::InvalidArgumentError("reward.incorrect: must be finite");
  }
  if (m.has_correctness_bonus() && !std::isfinite(m.correctness_bonus())) {
    return absl::InvalidArgumentError("reward.bonus: must be finite");
  }
  return absl::OkStatus();
}

v1::RewardResult ComputeReward(const v1::ComputeRewardRequest& request) {
  RewardInput in;
  in.verdict = request.verdict();
  in.speedup = request.speedup();
  for (int f : request.flags()) in.flags.push_back(static_cast<v1::Flag>(f));
  in.ci_low = request.speedup_ci_low();
  in.ci_high = request.speedup_ci_high();
  return ComputeReward(in, request.preset(), ParamsFrom(request.params()));
}

}  // namespace crl::reward
