// crl-trainer's Prometheus metrics: the health of learning (loss, KL, clip
// fraction, entropy, rewards, gradient norm) and of the service (steps,
// throughput, queues, what was skipped and why). Labels are bounded: the
// objective and the group outcome.
#ifndef CRL_SERVICES_TRAINER_TRAINER_METRICS_H_
#define CRL_SERVICES_TRAINER_TRAINER_METRICS_H_

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include "crl/v1/trainer.pb.h"
#include "services/trainer/trainer.h"

namespace crl::trainer {

// Thread-safe (prometheus-cpp metrics are).
struct TrainerMetrics {
  explicit TrainerMetrics(prometheus::Registry* registry);

  void ObserveStep(const StepStats& stats);
  void CountGroup(v1::GroupOutcome outcome);

  // crl_trainer_steps_total{objective}
  prometheus::Family<prometheus::Counter>& steps;
  // crl_trainer_step_seconds{objective}
  prometheus::Family<prometheus::Histogram>& step_seconds;
  // Of the last step: crl_trainer_loss, crl_trainer_kl, crl_trainer_clip_fraction,
  // crl_trainer_entropy, crl_trainer_grad_norm, crl_trainer_learning_rate,
  // crl_trainer_reward_mean, crl_trainer_reward_std, crl_trainer_tokens_per_second.
  prometheus::Gauge& loss;
  prometheus::Gauge& kl;
  prometheus::Gauge& clip_fraction;
  prometheus::Gauge& entropy;
  prometheus::Gauge& grad_norm;
  prometheus::Gauge& learning_rate;
  prometheus::Gauge& reward_mean;
  prometheus::Gauge& reward_std;
  prometheus::Gauge& tokens_per_second;
  // crl_trainer_tokens_total: tokens forwarded in training steps.
  prometheus::Counter& tokens;
  // crl_trainer_policy_version: the latest optimizer step / published version.
  prometheus::Gauge& policy_version;
  // crl_trainer_groups_total{outcome}: queued, skipped_equal_rewards,
  // skipped_too_few, dropped_stale, duplicate, trained.
  prometheus::Family<prometheus::Counter>& groups;
  // crl_trainer_stale_samples_total: completions dropped as too old.
  prometheus::Counter& stale_samples;
  // crl_trainer_examples_total: supervised examples accepted.
  prometheus::Counter& examples;
  // crl_trainer_queued_groups, crl_trainer_queued_examples
  prometheus::Gauge& queued_groups;
  prometheus::Gauge& queued_examples;
  // crl_trainer_rejected_total: requests refused as invalid.
  prometheus::Counter& rejected;
  // crl_trainer_step_failures_total: steps LibTorch failed (data kept queued).
  prometheus::Counter& step_failures;
  // crl_trainer_checkpoints_total
  prometheus::Counter& checkpoints;
};

}  // namespace crl::trainer

#endif  // CRL_SERVICES_TRAINER_TRAINER_METRICS_H_
