// The training objectives' arithmetic, free of models and batches: group
// advantages (GRPO, Dr. GRPO, CUDA-L1's clipping) and the clipped policy
// loss with an optional k3 KL term. Tested against an independent Python
// reference (tests/policy/reference_model.py).
//
// Advantages of one group of rewards r_1..r_G:
//   A_i = (r_i - mean(r)) / (std(r) + eps)   std: the sample std (n - 1), as TRL and veRL
//   A_i = r_i - mean(r)                      without std normalisation (Dr. GRPO)
//   A_i = clamp(A_i, -clip, clip)            CUDA-L1: clip = 1.5
// A group whose rewards are all equal has no signal: it is skipped.
//
// Per trained token t of a sequence with advantage A, with
// ratio = exp(logp_new - logp_old):
//   pg  = -min(ratio * A, clamp(ratio, 1 - clip_low, 1 + clip_high) * A)
//   kl  = exp(logp_ref - logp_new) - (logp_ref - logp_new) - 1   (k3, >= 0)
//   loss = sum_t weight_t * (pg_t + kl_coef * kl_t)
// where the weights carry the aggregation: 1 / (tokens in the batch) for
// token-mean (DAPO), 1 / (sequences * the sequence's tokens) for
// sequence-mean (GRPO's original).
#ifndef CRL_SERVICES_TRAINER_OBJECTIVE_H_
#define CRL_SERVICES_TRAINER_OBJECTIVE_H_

#include <torch/torch.h>

#include <string>
#include <vector>

namespace crl::trainer {

struct AdvantageOptions {
  // Divide by the group's standard deviation (GRPO); false: mean-centred
  // only (Dr. GRPO).
  bool normalize_std = true;
  // |A| is clipped to this after normalisation (CUDA-L1's 1.5); 0: no clip.
  double clip = 1.5;
  double epsilon = 1e-6;
};

// The advantages of one group; empty when the rewards are all equal. At
// least two rewards, all finite (the caller validates).
std::vector<double> GroupAdvantages(const std::vector<double>& rewards,
                                    const AdvantageOptions& options);

enum class Aggregation { kTokenMean, kSequenceMean };
// "token-mean" / "sequence-mean"; false if unknown.
bool ParseAggregation(const std::string& name, Aggregation* out);
const char* AggregationName(Aggregation a);

struct PolicyLossOptions {
  double clip_low = 0.2;
  // DAPO's clip-higher: a larger upper bound keeps rare tokens learnable.
  double clip_high = 0.28;
  // Weight of the k3 KL estimate to the reference policy (0: no reference
  // pass at all).
  double kl_coef = 0.0;
};

// Sums over the tokens given (for the statistics; divide by the token count).
struct PolicyLossTerms {
  torch::Tensor loss;         // scalar, differentiable: sum weight * (pg + kl_coef * kl)
  torch::Tensor kl_sum;       // scalar (0 without a reference)
  torch::Tensor clipped_sum;  // tokens whose clipped term was the active one
  torch::Tensor ratio_sum;
};

// All [M] float32 over the trained tokens: logp_new (differentiable),
// logp_old, logp_ref (undefined when kl_coef is 0), advantage and weight.
PolicyLossTerms ClippedPolicyLoss(const torch::Tensor& logp_new, const torch::Tensor& logp_old,
                                  const torch::Tensor& logp_ref, const torch::Tensor& advantage,
                                  const torch::Tensor& weight, const PolicyLossOptions& options);

}  // namespace crl::trainer

#endif  // CRL_SERVICES_TRAINER_OBJECTIVE_H_
