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
  for (v1::Flag f : in.flags) {
    if (IsTrustFlag(f)) {
      r.set_status(v1::REWARD_STATUS_WITHHELD);
      r.set_explanation(absl::StrCat("withheld: ", v1::Flag_Name(f), " raised and not cleared"));
      return r;
    }
  }
  const bool correct = in.verdict == v1::VERDICT_OK;
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
      value = correct ? std::clamp(in.speedup - 1, -p.clip_k, p.clip_k) : p.incorrect_reward;
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

v1::RewardResult ComputeReward(const v1::ComputeRewardRequest& request,
                               const RewardParams& params) {
  RewardInput in;
  in.verdict = request.verdict();
  in.speedup = request.speedup();
  for (int f : request.flags()) in.flags.push_back(static_cast<v1::Flag>(f));
  return ComputeReward(in, request.preset(), params);
}

std::vector<double> NormalizeGroup(const std::vector<v1::RewardResult>& group, double clip_k) {
  std::vector<double> out(group.size(), 0.0);
  double sum = 0, sq = 0;
  int n = 0;
  for (const auto& r : group) {
    if (r.status() != v1::REWARD_STATUS_OK) continue;
    sum += r.reward();
    sq += r.reward() * r.reward();
    ++n;
  }
  if (n < 2) return out;
  double mean = sum / n;
  double var = std::max(0.0, sq / n - mean * mean);
  double sd = std::sqrt(var);
  if (sd < 1e-6) return out;
  for (size_t i = 0; i < group.size(); ++i) {
    if (group[i].status() != v1::REWARD_STATUS_OK) continue;
    out[i] = std::clamp((group[i].reward() - mean) / sd, -clip_k, clip_k);
  }
  return out;
}

}  // namespace crl::reward
