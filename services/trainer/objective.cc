#include "services/trainer/objective.h"

#include <algorithm>
#include <cmath>

namespace crl::trainer {

std::vector<double> GroupAdvantages(const std::vector<double>& rewards,
                                    const AdvantageOptions& options) {
  const size_t n = rewards.size();
  if (n < 2) return {};
  double mean = 0;
  for (double r : rewards) mean += r;
  mean /= n;
  double ss = 0;
  bool all_equal = true;
  for (double r : rewards) {
    ss += (r - mean) * (r - mean);
    if (r != rewards[0]) all_equal = false;
  }
  if (all_equal) return {};
  const double std = std::sqrt(ss / (n - 1));
  std::vector<double> out(n);
  for (size_t i = 0; i < n; ++i) {
    double a = rewards[i] - mean;
    if (options.normalize_std) a /= std + options.epsilon;
    if (options.clip > 0) a = std::clamp(a, -options.clip, options.clip);
    out[i] = a;
  }
  return out;
}

bool ParseAggregation(const std::string& name, Aggregation* out) {
  if (name == "token-mean") *out = Aggregation::kTokenMean;
  else if (name == "sequence-mean") *out = Aggregation::kSequenceMean;
  else return false;
  return true;
}

const char* AggregationName(Aggregation a) {
  return a == Aggregation::kTokenMean ? "token-mean" : "sequence-mean";
}

PolicyLossTerms ClippedPolicyLoss(const torch::Tensor& logp_new, const torch::Tensor& logp_old,
                                  const torch::Tensor& logp_ref, const torch::Tensor& advantage,
                                  const torch::Tensor& weight, const PolicyLossOptions& options) {
  torch::Tensor ratio = torch::exp(logp_new - logp_old);
  torch::Tensor unclipped = ratio * advantage;
  torch::Tensor clipped =
      torch::clamp(ratio, 1.0 - options.clip_low, 1.0 + options.clip_high) * advantage;
  torch::Tensor pg = -torch::min(unclipped, clipped);
  PolicyLossTerms t;
  torch::Tensor per_token = pg;
  if (options.kl_coef > 0 && logp_ref.defined()) {
    torch::Tensor d = logp_ref - logp_new;
    torch::Tensor kl = torch::exp(d) - d - 1;
    per_token = per_token + options.kl_coef * kl;
    t.kl_sum = kl.detach().sum();
  } else {
    t.kl_sum = torch::zeros({}, logp_new.options());
  }
  t.loss = (per_token * weight).sum();
  t.clipped_sum = (clipped < unclipped).to(torch::kFloat32).sum().detach();
  t.ratio_sum = ratio.detach().sum();
  return t;
}

}  // namespace crl::trainer
