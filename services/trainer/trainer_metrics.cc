#include "services/trainer/trainer_metrics.h"

#include "absl/strings/ascii.h"

namespace crl::trainer {
namespace {

prometheus::Gauge& Gauge(prometheus::Registry* r, const char* name, const char* help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(*r).Add({});
}
prometheus::Counter& Counter(prometheus::Registry* r, const char* name, const char* help) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(*r).Add({});
}

}  // namespace

TrainerMetrics::TrainerMetrics(prometheus::Registry* r)
    : steps(prometheus::BuildCounter()
                .Name("crl_trainer_steps_total")
                .Help("Optimizer steps, by objective")
                .Register(*r)),
      step_seconds(prometheus::BuildHistogram()
                       .Name("crl_trainer_step_seconds")
                       .Help("Wall time of a training batch, by objective")
                       .Register(*r)),
      loss(Gauge(r, "crl_trainer_loss", "Loss of the last step")),
      kl(Gauge(r, "crl_trainer_kl", "Mean k3 KL to the reference per trained token, last step")),
      clip_fraction(Gauge(r, "crl_trainer_clip_fraction", "Share of trained tokens clipped, last step")),
      entropy(Gauge(r, "crl_trainer_entropy", "Mean policy entropy per trained token (nats), last step")),
      grad_norm(Gauge(r, "crl_trainer_grad_norm", "Global gradient norm before clipping, last step")),
      learning_rate(Gauge(r, "crl_trainer_learning_rate", "Learning rate of the last step")),
      reward_mean(Gauge(r, "crl_trainer_reward_mean", "Mean reward of the last policy-gradient batch")),
      reward_std(Gauge(r, "crl_trainer_reward_std", "Reward standard deviation of the last policy-gradient batch")),
      tokens_per_second(Gauge(r, "crl_trainer_tokens_per_second", "Tokens forwarded per second, last step")),
      tokens(Counter(r, "crl_trainer_tokens_total", "Tokens forwarded in training steps")),
      policy_version(Gauge(r, "crl_trainer_policy_version", "Latest policy version (optimizer steps)")),
      groups(prometheus::BuildCounter()
                 .Name("crl_trainer_groups_total")
                 .Help("Groups submitted, by outcome")
                 .Register(*r)),
      stale_samples(Counter(r, "crl_trainer_stale_samples_total", "Completions dropped as sampled by a too old policy")),
      examples(Counter(r, "crl_trainer_examples_total", "Supervised examples accepted")),
      queued_groups(Gauge(r, "crl_trainer_queued_groups", "Groups waiting for a step")),
      queued_examples(Gauge(r, "crl_trainer_queued_examples", "Examples waiting for a step")),
      rejected(Counter(r, "crl_trainer_rejected_total", "Requests refused as invalid")),
      step_failures(Counter(r, "crl_trainer_step_failures_total", "Training steps that failed")),
      checkpoints(Counter(r, "crl_trainer_checkpoints_total", "Checkpoints written")) {}

void TrainerMetrics::ObserveStep(const StepStats& s) {
  const std::string objective = ObjectiveName(s.objective);
  steps.Add({{"objective", objective}}).Increment();
  step_seconds
      .Add({{"objective", objective}},
           prometheus::Histogram::BucketBoundaries{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300})
      .Observe(s.seconds);
  loss.Set(s.loss);
  kl.Set(s.kl);
  clip_fraction.Set(s.clip_fraction);
  entropy.Set(s.entropy);
  grad_norm.Set(s.grad_norm);
  learning_rate.Set(s.lr);
  if (s.objective == Objective::kPolicyGradient) {
    reward_mean.Set(s.reward_mean);
    reward_std.Set(s.reward_std);
  }
  if (s.seconds > 0) tokens_per_second.Set(s.tokens / s.seconds);
  tokens.Increment(static_cast<double>(s.tokens));
  policy_version.Set(static_cast<double>(s.step));
}

void TrainerMetrics::CountGroup(v1::GroupOutcome outcome) {
  std::string name = v1::GroupOutcome_Name(outcome);
  const std::string prefix = "GROUP_OUTCOME_";
  if (name.rfind(prefix, 0) == 0) name = name.substr(prefix.size());
  groups.Add({{"outcome", absl::AsciiStrToLower(name)}}).Increment();
}

}  // namespace crl::trainer
