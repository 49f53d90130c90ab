#include "services/trainer/trainer.h"

#include <cmath>

#include <torch/version.h>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "lib/policy/logprobs.h"
#include "services/trainer/torch_call.h"

namespace crl::trainer {

double LearningRate(const OptimizerOptions& o, int64_t step) {
  if (o.warmup_steps > 0 && step < o.warmup_steps) {
    return o.lr * static_cast<double>(step + 1) / o.warmup_steps;
  }
  if (o.total_steps <= o.warmup_steps) return o.lr;
  const double progress =
      std::min(1.0, static_cast<double>(step - o.warmup_steps) / (o.total_steps - o.warmup_steps));
  return o.lr * (o.min_lr_ratio + (1 - o.min_lr_ratio) * 0.5 * (1 + std::cos(M_PI * progress)));
}

const char* ObjectiveName(Objective o) {
  return o == Objective::kSupervised ? "supervised" : "policy-gradient";
}

Trainer::Trainer(TrainerOptions options, ClockInterface* clock, DistributedInterface* dist)
    : options_(std::move(options)), clock_(clock), dist_(dist ? dist : &single_) {
  phase_.optimizer = options_.optimizer;
}

Trainer::~Trainer() = default;

absl::StatusOr<std::unique_ptr<Trainer>> Trainer::Create(const TrainerOptions& options,
                                                         ClockInterface* clock,
                                                         DistributedInterface* dist) {
  if (options.model_dir.empty()) return absl::InvalidArgumentError("model_dir: required");
  if (options.out_dir.empty()) return absl::InvalidArgumentError("out_dir: required");
  if (options.updates_per_batch < 1) {
    return absl::InvalidArgumentError("updates_per_batch: must be at least 1");
  }
  if (options.lora && options.lora_config.dropout > 0 && options.activation_checkpointing) {
    return absl::InvalidArgumentError(
        "activation_checkpointing: not with lora.dropout > 0 (a recomputed layer would draw "
        "another dropout mask)");
  }
  if (options.policy_loss.clip_low < 0 || options.policy_loss.clip_low >= 1 ||
      options.policy_loss.clip_high < 0) {
    return absl::InvalidArgumentError("clip_low / clip_high: need 0 <= clip_low < 1, clip_high >= 0");
  }
  std::unique_ptr<Trainer> t(new Trainer(options, clock, dist));
  CRL_RETURN_IF_ERROR(t->Init());
  return t;
}

absl::Status Trainer::Init() {
  const std::string dtype = options_.precision == "bfloat16" ? "bfloat16" : "float32";
  if (options_.precision != "auto" && options_.precision != "float32" &&
      options_.precision != "bfloat16") {
    return absl::InvalidArgumentError(
        absl::StrCat("precision: '", options_.precision, "' is not auto, float32 or bfloat16"));
  }
  CRL_ASSIGN_OR_RETURN(placement_, policy::ResolvePlacement(options_.device, dtype));
  autocast_ = options_.precision == "auto" && placement_.device.is_cuda();
  CRL_ASSIGN_OR_RETURN(model_, policy::LoadPolicy(options_.model_dir, "", placement_));
  // Seeds differ per rank (LoRA dropout masks), and are restored on resume.
  DefaultGenerator(torch::kCPU).set_current_seed(options_.seed + dist_->rank());
  if (placement_.device.is_cuda()) {
    DefaultGenerator(placement_.device).set_current_seed(options_.seed + dist_->rank());
  }
  if (options_.lora) {
    torch::manual_seed(options_.seed);  // the same initial factors on every rank
    CRL_RETURN_IF_ERROR(policy::AttachLora(model_.get(), options_.lora_config));
    DefaultGenerator(torch::kCPU).set_current_seed(options_.seed + dist_->rank());
  } else if (options_.policy_loss.kl_coef > 0) {
    CRL_ASSIGN_OR_RETURN(reference_, policy::LoadPolicy(options_.model_dir, "", placement_));
    for (auto& [name, p] : reference_->NamedParameters()) p.requires_grad_(false);
    reference_->module().eval();
  }
  // Trainable: LoRA factors, or every parameter.
  for (auto& [name, p] : model_->NamedParameters()) {
    const bool lora = name.find(".lora_") != std::string::npos;
    p.requires_grad_(options_.lora ? lora : true);
  }
  for (const auto& [name, p] : Trainable()) {
    exp_avg_.push_back(torch::zeros_like(p));
    exp_avg_sq_.push_back(torch::zeros_like(p));
  }
  model_->module().train();
  return absl::OkStatus();
}

std::vector<std::pair<std::string, torch::Tensor>> Trainer::Trainable() const {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (auto& [name, p] : model_->NamedParameters()) {
    if (p.requires_grad()) out.emplace_back(name, p);
  }
  return out;
}

torch::Tensor Trainer::SelectedHidden(const MicroBatch& mb, bool with_segments) {
  policy::ForwardOptions fo;
  if (with_segments) fo.segment_ids = mb.segment_ids.to(placement_.device);
  fo.checkpoint_layers = options_.activation_checkpointing;
  torch::Tensor h = model_->Hidden(mb.ids.to(placement_.device), fo);
  return h.reshape({-1, h.size(-1)}).index_select(0, mb.positions.to(placement_.device));
}

void Trainer::FillLogprobs(std::vector<MicroBatch>& mbs, bool reference) {
  torch::NoGradGuard no_grad;
  policy::AutocastGuard autocast(autocast_, placement_.device);
  for (MicroBatch& mb : mbs) {
    policy::CausalLm* m = reference && reference_ ? reference_.get() : model_.get();
    std::unique_ptr<policy::ScopedLoraBypass> bypass;
    if (reference && !reference_) bypass = std::make_unique<policy::ScopedLoraBypass>(model_.get());
    policy::ForwardOptions fo;
    if (mb.segment_ids.defined()) fo.segment_ids = mb.segment_ids.to(placement_.device);
    torch::Tensor h = m->Hidden(mb.ids.to(placement_.device), fo);
    torch::Tensor rows = h.reshape({-1, h.size(-1)}).index_select(0, mb.positions.to(placement_.device));
    policy::LogprobOptions lo;
    lo.chunk_rows = options_.logprob_chunk_rows;
    lo.entropy = false;
    torch::Tensor lp = policy::ChunkedTokenLogprobs(rows, m->OutputEmbedding(), mb.targets.to(placement_.device), lo)
                           .logprobs.to(torch::kCPU);
    (reference ? mb.ref_logprobs : mb.old_logprobs) = lp;
  }
}

absl::StatusOr<std::vector<std::vector<float>>> Trainer::Logprobs(
    const std::vector<TrainSequence>& batch) {
  std::vector<int> all(batch.size());
  for (size_t i = 0; i < batch.size(); ++i) all[i] = static_cast<int>(i);
  LayoutOptions layout{options_.micro_batch_tokens, options_.max_seq_len, false, options_.aggregation};
  std::vector<MicroBatch> mbs = LayOut(batch, all, layout);
  for (auto& mb : mbs) mb.old_logprobs = torch::Tensor();
  CRL_RETURN_IF_ERROR(Torch("logprobs", [&] {
                        const bool was_training = model_->module().is_training();
                        model_->module().eval();
                        FillLogprobs(mbs, /*reference=*/false);
                        model_->module().train(was_training);
                        return 0;
                      }).status());
  std::vector<std::vector<float>> out(batch.size());
  for (const MicroBatch& mb : mbs) {
    for (size_t k = 0; k < mb.sequences.size(); ++k) {
      const auto [b, e] = mb.spans[k];
      torch::Tensor span = mb.old_logprobs.narrow(0, b, e - b).contiguous();
      out[mb.sequences[k]].assign(span.data_ptr<float>(), span.data_ptr<float>() + (e - b));
    }
  }
  return out;
}

absl::StatusOr<StepStats> Trainer::Train(const std::vector<TrainSequence>& batch,
                                         Objective objective) {
  if (batch.empty()) return absl::InvalidArgumentError("batch: empty");
  auto r = Torch("training step", [&] { return TrainLocked(batch, objective); });
  if (!r.ok()) return r.status();
  return *r;
}

std::vector<MicroBatch> Trainer::Prepare(const std::vector<TrainSequence>& batch, Objective objective) {
  const bool pg = objective == Objective::kPolicyGradient;
  LayoutOptions layout;
  layout.micro_batch_tokens = options_.micro_batch_tokens;
  layout.max_seq_len = options_.max_seq_len;
  layout.pack = !pg && options_.pack_supervised;
  layout.aggregation = pg ? options_.aggregation : Aggregation::kTokenMean;
  std::vector<MicroBatch> mbs =
      LayOut(batch, Shard(batch.size(), dist_->rank(), dist_->world_size()), layout);
  if (pg) {
    bool missing_old = options_.recompute_old_logprobs;
    for (const auto& mb : mbs) missing_old = missing_old || !mb.old_logprobs.defined();
    if (missing_old) FillLogprobs(mbs, /*reference=*/false);
    if (options_.policy_loss.kl_coef > 0) FillLogprobs(mbs, /*reference=*/true);
  }
  return mbs;
}

absl::StatusOr<Trainer::PassTotals> Trainer::Pass(std::vector<MicroBatch>& mbs, Objective objective) {
  const bool pg = objective == Objective::kPolicyGradient;
  const auto params = Trainable();
  // Over several ranks, gradients in buckets summed while the last backward
  // runs; else as zero_grad(set_to_none=True): backward writes the first
  // gradients instead of adding them to zeros, and no kernel runs per
  // parameter.
  const bool overlap =
      dist_->world_size() > 1 && options_.reduce_bucket_mb > 0 && GradientBuckets::Supports(params);
  if (overlap) {
    if (!buckets_ || !buckets_->Holds(params)) {
      buckets_ = std::make_unique<GradientBuckets>(
          params, dist_, static_cast<int64_t>(options_.reduce_bucket_mb * (1 << 20)));
    }
    buckets_->Zero();
  } else {
    for (auto& [name, p] : params) p.mutable_grad() = torch::Tensor();
  }
  const auto dev = placement_.device;
  const auto f64 = torch::TensorOptions().dtype(torch::kFloat64).device(dev);
  // loss, entropy, kl, clipped, ratio, trained tokens, tokens
  torch::Tensor sums = torch::zeros({7}, f64);
  double trained = 0, tokens = 0;
  for (size_t m = 0; m < mbs.size(); ++m) {
    MicroBatch& mb = mbs[m];
    policy::AutocastGuard autocast(autocast_, dev);
    torch::Tensor rows = SelectedHidden(mb, mb.segment_ids.defined());
    policy::LogprobOptions lo;
    lo.chunk_rows = options_.logprob_chunk_rows;
    policy::ChunkedLogprobs lp = policy::ChunkedTokenLogprobs(rows, model_->OutputEmbedding(), mb.targets.to(dev), lo);
    torch::Tensor weights = mb.weights.to(dev);
    torch::Tensor loss, kl = torch::zeros({}, f64), clipped = kl, ratio = kl;
    if (pg) {
      PolicyLossTerms t = ClippedPolicyLoss(
          lp.logprobs, mb.old_logprobs.to(dev),
          mb.ref_logprobs.defined() ? mb.ref_logprobs.to(dev) : torch::Tensor(),
          mb.advantages.to(dev), weights, options_.policy_loss);
      loss = t.loss;
      kl = t.kl_sum;
      clipped = t.clipped_sum;
      ratio = t.ratio_sum;
    } else {
      loss = -(lp.logprobs * weights).sum();
    }
    if (overlap && m + 1 == mbs.size()) buckets_->Arm();
    loss.backward();
    auto d64 = [](const torch::Tensor& t) { return t.detach().to(torch::kFloat64); };
    sums.narrow(0, 0, 5) += torch::stack({d64(loss), d64(lp.entropy.sum()), d64(kl), d64(clipped), d64(ratio)});
    trained += static_cast<double>(mb.targets.size(0));
    tokens += static_cast<double>(mb.tokens);
  }
  sums.narrow(0, 5, 1).fill_(trained);  // a kernel's argument: no copy that waits
  sums.narrow(0, 6, 1).fill_(tokens);
  // Gradients (zeros where a rank had nothing) and the statistics, summed
  // over ranks: the buckets not yet summed and then the statistics, or all
  // in one exchange.
  std::vector<torch::Tensor> exchange;
  if (overlap) {
    CRL_RETURN_IF_ERROR(buckets_->Finish());
  } else {
    for (auto& [name, p] : params) {
      if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
      exchange.push_back(p.grad());
    }
  }
  exchange.push_back(sums);
  CRL_RETURN_IF_ERROR(dist_->AllReduceSum(exchange));
  PassTotals totals;
  totals.sums = sums;
  if (!params.empty()) {
    // The norm of every gradient in one multi-tensor (foreach) kernel.
    std::vector<torch::Tensor> grads;
    for (auto& [name, p] : params) grads.push_back(p.grad().to(torch::kFloat32));
    totals.grad_norm = torch::stack(at::_foreach_norm(grads, 2)).to(torch::kFloat64).norm();
  }
  return totals;
}

StepStats Trainer::ReadTotals(const PassTotals& totals, Objective objective) const {
  std::vector<torch::Tensor> parts = {totals.sums};
  if (totals.grad_norm.defined()) parts.push_back(totals.grad_norm.reshape({1}));
  const torch::Tensor host = torch::cat(parts).to(torch::kCPU);  // the one wait
  const double* v = host.data_ptr<double>();
  StepStats stats;
  stats.objective = objective;
  stats.step = step_;
  const double tokens = std::max(1.0, v[5]);
  stats.loss = v[0];
  stats.entropy = v[1] / tokens;
  stats.kl = v[2] / tokens;
  stats.clip_fraction = v[3] / tokens;
  stats.ratio_mean = v[4] / tokens;
  stats.trained_tokens = static_cast<int64_t>(v[5]);
  stats.tokens = static_cast<int64_t>(v[6]);
  stats.grad_norm = totals.grad_norm.defined() ? v[7] : 0.0;
  return stats;
}

void Trainer::ClipGradients(const torch::Tensor& grad_norm) {
  const double clip = options_.optimizer.grad_clip;
  if (clip <= 0 || !grad_norm.defined()) return;
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> grads;
  for (auto& [name, p] : Trainable()) grads.push_back(p.grad());
  if (grads.empty()) return;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
  // The scale stays on the device (1 when the norm is within the clip):
  // the optimizer's kernels queue behind it without a wait.
  at::_foreach_mul_(grads, (clip / (grad_norm + 1e-6)).clamp_max(1.0).to(grads.front().scalar_type()));
#else
  // No multi-tensor multiply by a tensor in this LibTorch: read the norm.
  const double norm = grad_norm.item<double>();
  if (norm > clip) at::_foreach_mul_(grads, clip / (norm + 1e-6));
#endif
}

absl::StatusOr<StepStats> Trainer::Gradients(const std::vector<TrainSequence>& batch,
                                             Objective objective) {
  if (batch.empty()) return absl::InvalidArgumentError("batch: empty");
  auto r = Torch("gradients", [&]() -> absl::StatusOr<StepStats> {
    std::vector<MicroBatch> mbs = Prepare(batch, objective);
    CRL_ASSIGN_OR_RETURN(PassTotals totals, Pass(mbs, objective));
    return ReadTotals(totals, objective);
  });
  if (!r.ok()) return r.status();
  return *r;
}

absl::StatusOr<StepStats> Trainer::TrainLocked(const std::vector<TrainSequence>& batch,
                                               Objective objective) {
  const absl::Time start = clock_->MonotonicNow();
  const bool pg = objective == Objective::kPolicyGradient;
  std::vector<MicroBatch> mbs = Prepare(batch, objective);
  const int updates = pg ? options_.updates_per_batch : 1;
  PassTotals first;
  double lr = 0;
  for (int u = 0; u < updates; ++u) {
    CRL_ASSIGN_OR_RETURN(PassTotals pass, Pass(mbs, objective));
    ClipGradients(pass.grad_norm);
    const double this_lr = LearningRate(phase_.optimizer, phase_.steps);
    OptimizerStep(this_lr);
    ++step_;
    ++phase_.steps;
    if (u == 0) {  // the first pass's statistics (ratio 1 when on-policy)
      first = pass;
      lr = this_lr;
    }
  }
  StepStats stats = ReadTotals(first, objective);
  stats.lr = lr;
  stats.step = step_;
  stats.tokens *= updates;  // every update forwards the same micro-batches
  stats.sequences = static_cast<int64_t>(batch.size());
  for (const auto& s : batch) stats.ids.push_back(s.id);
  if (pg) {
    double sum = 0, ss = 0;
    for (const auto& s : batch) sum += s.reward;
    stats.reward_mean = sum / batch.size();
    for (const auto& s : batch) ss += (s.reward - stats.reward_mean) * (s.reward - stats.reward_mean);
    stats.reward_std = std::sqrt(ss / batch.size());
  }
  stats.seconds = absl::ToDoubleSeconds(clock_->MonotonicNow() - start);
  return stats;
}

// AdamW exactly as torch.optim.AdamW (decoupled weight decay, bias
// correction), on every trainable parameter at once: multi-tensor (foreach)
// kernels, a handful of launches for all parameters instead of eight per
// parameter (with LoRA on every projection of a 24-layer model, 336
// parameters: ~2,700 launches a step, as many as the forward pass).
void Trainer::OptimizerStep(double lr) {
  torch::NoGradGuard no_grad;
  const OptimizerOptions& o = phase_.optimizer;
  const double t = static_cast<double>(phase_.steps + 1);
  const double bias1 = 1 - std::pow(o.beta1, t), bias2 = 1 - std::pow(o.beta2, t);
  std::vector<torch::Tensor> params, grads;
  for (auto& [name, p] : Trainable()) {
    params.push_back(p);
    grads.push_back(p.grad());
  }
  if (params.empty()) return;
  if (o.weight_decay > 0) at::_foreach_mul_(params, 1 - lr * o.weight_decay);
  at::_foreach_mul_(exp_avg_, o.beta1);
  at::_foreach_add_(exp_avg_, grads, 1 - o.beta1);
  at::_foreach_mul_(exp_avg_sq_, o.beta2);
  at::_foreach_addcmul_(exp_avg_sq_, grads, grads, 1 - o.beta2);
  std::vector<torch::Tensor> denom = at::_foreach_sqrt(exp_avg_sq_);
  at::_foreach_div_(denom, std::sqrt(bias2));
  at::_foreach_add_(denom, o.eps);
  at::_foreach_addcdiv_(params, exp_avg_, denom, -lr / bias1);
}

void Trainer::BeginPhase(const std::string& id, const OptimizerOptions& optimizer) {
  torch::NoGradGuard no_grad;
  for (auto& t : exp_avg_) t.zero_();
  for (auto& t : exp_avg_sq_) t.zero_();
  phase_.id = id;
  phase_.optimizer = optimizer;
  phase_.steps = 0;
}

}  // namespace crl::trainer
