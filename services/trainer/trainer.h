// The trainer's logic, free of gRPC: a policy (full weights or LoRA), an
// AdamW optimizer with warm-up + cosine schedule and gradient clipping, one
// Train call per batch for either objective, checkpoints that resume
// bit-for-bit, and published policy versions the sampler loads.
//
//   CRL_ASSIGN_OR_RETURN(auto t, Trainer::Create(options, clock, dist));
//   CRL_ASSIGN_OR_RETURN(StepStats s, t->Train(batch, Objective::kPolicyGradient));
//   CRL_RETURN_IF_ERROR(t->SaveCheckpoint(extra));
//   CRL_ASSIGN_OR_RETURN(PublishedPolicy p, t->Publish());
//
// Objectives:
//   kSupervised        cross-entropy on completion tokens (SFT; "keep the
//                      successes": REINFORCE with a 0/1 reward is SFT on the 1s)
//   kPolicyGradient    the clipped policy loss of objective.h (GRPO / DAPO)
// The policy version counts the changes of the weights: optimizer steps, and
// snapshots restored (RestoreSnapshot).
//
// Not thread-safe: one thread drives a Trainer (the service's training thread).
#ifndef CRL_SERVICES_TRAINER_TRAINER_H_
#define CRL_SERVICES_TRAINER_TRAINER_H_

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/clock.h"
#include "lib/policy/loader.h"
#include "lib/policy/lora.h"
#include "lib/policy/model.h"
#include "services/trainer/batch.h"
#include "services/trainer/distributed.h"
#include "services/trainer/grad_buckets.h"
#include "services/trainer/objective.h"

namespace crl::trainer {

struct OptimizerOptions {
  double lr = 1e-5;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
  // Linear warm-up from 0 over this many steps.
  int warmup_steps = 0;
  // Cosine decay to min_lr_ratio * lr at this step (0: constant after warm-up).
  int total_steps = 0;
  double min_lr_ratio = 0.1;
  // Largest global gradient norm (0: no clipping).
  double grad_clip = 1.0;
};

// The learning rate of optimizer step `step` (0-based).
double LearningRate(const OptimizerOptions& o, int64_t step);

// A training phase (a run's stage): its own optimizer (AdamW moments from
// zero) and schedule, whose steps count from the phase's first. Before any
// BeginPhase, the trainer's own schedule from step 0.
struct Phase {
  std::string id;  // empty: the trainer's own phase
  OptimizerOptions optimizer;
  int64_t steps = 0;  // optimizer steps taken in this phase
};

struct TrainerOptions {
  // Hugging Face layout: config.json, weights, tokenizer.json beside them.
  std::string model_dir;
  // checkpoints/ and policy/ (published versions) go here.
  std::string out_dir;
  std::string device = "auto";
  // "auto": float32 weights, bfloat16 autocast on CUDA, float32 on CPU;
  // "float32"; "bfloat16" (weights and optimizer state in bfloat16).
  std::string precision = "auto";
  // LoRA on the projections named in lora_config; otherwise full fine-tune.
  bool lora = false;
  policy::LoraConfig lora_config;
  OptimizerOptions optimizer;
  PolicyLossOptions policy_loss;
  Aggregation aggregation = Aggregation::kTokenMean;
  // Optimizer steps per policy-gradient batch (PPO epochs); after the first,
  // the ratio moves away from 1 and the clip matters.
  int updates_per_batch = 1;
  // Recompute old log-probabilities with the current weights instead of
  // using the sampler's (behaviour) ones.
  bool recompute_old_logprobs = false;
  int64_t micro_batch_tokens = 16384;
  int64_t max_seq_len = 4096;
  // Pack supervised sequences into max_seq_len rows.
  bool pack_supervised = true;
  bool activation_checkpointing = false;
  // Data parallel: gradients in buckets of this many MiB, each summed over
  // the ranks as soon as the last backward has filled it (grad_buckets.h);
  // 0: one exchange after the backward.
  double reduce_bucket_mb = 25;
  // Rows per chunk of the output-embedding (0: automatic).
  int64_t logprob_chunk_rows = 0;
  int keep_checkpoints = 3;
  int keep_published = 3;
  uint64_t seed = 0;
};

enum class Objective { kSupervised, kPolicyGradient };
const char* ObjectiveName(Objective o);

struct StepStats {
  Objective objective = Objective::kSupervised;
  int64_t step = 0;  // after the update: the new policy version
  double loss = 0;
  double kl = 0;             // mean per trained token (policy gradient with kl_coef > 0)
  double clip_fraction = 0;  // of trained tokens
  double ratio_mean = 0;
  double entropy = 0;        // mean per trained token, nats
  double grad_norm = 0;      // before clipping
  double lr = 0;
  double reward_mean = 0, reward_std = 0;
  int64_t sequences = 0;
  int64_t trained_tokens = 0;  // completion tokens
  int64_t tokens = 0;          // all tokens forwarded
  double seconds = 0;
  std::vector<std::string> ids;  // the groups / examples trained on
};

struct PublishedPolicy {
  int64_t version = 0;
  std::string path;        // a PEFT adapter directory, or a full HF model directory
  bool adapter = false;    // LoRA adapter (load over base_model) or full weights
  std::string base_model;  // the model directory the run started from
};

class Trainer {
 public:
  // Loads the model (and attaches LoRA), and a reference
  // policy when kl_coef > 0 (the base model with adapters bypassed for LoRA,
  // a frozen copy for full fine-tune). `clock` and `dist` must outlive it;
  // `dist` may be null (a single process).
  static absl::StatusOr<std::unique_ptr<Trainer>> Create(const TrainerOptions& options,
                                                         ClockInterface* clock,
                                                         DistributedInterface* dist);
  ~Trainer();

  // One batch (the same global batch on every rank): updates_per_batch
  // optimizer steps for policy gradient, one for supervised. INVALID_ARGUMENT
  // for an empty batch; INTERNAL when LibTorch fails (the message says why;
  // the weights are then those before the call only if it failed before the
  // first optimizer step).
  absl::StatusOr<StepStats> Train(const std::vector<TrainSequence>& batch, Objective objective);

  // The loss and gradients of one batch without an optimizer step: each
  // trainable parameter's .grad holds the gradient summed over ranks,
  // unclipped (grad_norm says its norm). For tests and tools; Train is this
  // plus clipping and AdamW.
  absl::StatusOr<StepStats> Gradients(const std::vector<TrainSequence>& batch, Objective objective);

  // Log-probabilities of each sequence's completion under the current
  // weights, without gradients.
  absl::StatusOr<std::vector<std::vector<float>>> Logprobs(const std::vector<TrainSequence>& batch);

  // Writes out_dir/checkpoints/step-N atomically (weights and optimizer in
  // float32, RNG, step, `extra`), then prunes to keep_checkpoints.
  absl::Status SaveCheckpoint(const nlohmann::json& extra);
  // Loads the latest checkpoint under out_dir (or `dir`) and returns its
  // `extra`; NOT_FOUND when there is none.
  absl::StatusOr<nlohmann::json> Resume(const std::string& dir = "");
  // Starts a phase: fresh optimizer moments, `optimizer`'s schedule (its
  // betas, clip and decay are the trainer's).
  void BeginPhase(const std::string& id, const OptimizerOptions& optimizer);
  // Writes the trained weights to out_dir/snapshots/<name> (replacing one of
  // that name). INVALID_ARGUMENT for a name that is not [A-Za-z0-9._-]+.
  absl::Status SaveSnapshot(const std::string& name);
  // Loads the trained weights of snapshot `name` (NOT_FOUND names it): a new
  // version (step() + 1). The optimizer is left as it is (BeginPhase resets it).
  absl::Status RestoreSnapshot(const std::string& name);
  // Whether a phase could save `save` and restore `restore` (either may be
  // empty): the names are valid and the snapshot to restore exists. Checked
  // before a phase is sent to the other ranks.
  absl::Status CheckPhaseSnapshots(const std::string& save, const std::string& restore) const;
  const Phase& phase() const { return phase_; }

  // Writes the current policy as version step(): a PEFT adapter for LoRA,
  // a full Hugging Face directory otherwise (rank 0 writes; others return
  // the same description).
  absl::StatusOr<PublishedPolicy> Publish();

  int64_t step() const { return step_; }
  const policy::ModelConfig& config() const { return model_->config(); }
  const TrainerOptions& options() const { return options_; }
  int rank() const { return dist_->rank(); }
  policy::CausalLm& model() { return *model_; }
  // The parameters being trained (LoRA factors, or all), by name.
  std::vector<std::pair<std::string, torch::Tensor>> Trainable() const;

 private:
  Trainer(TrainerOptions options, ClockInterface* clock, DistributedInterface* dist);
  absl::Status Init();
  absl::StatusOr<StepStats> TrainLocked(const std::vector<TrainSequence>& batch,
                                        Objective objective);
  // Micro-batches of this rank's share, old / reference log-probabilities
  // filled for policy gradient.
  std::vector<MicroBatch> Prepare(const std::vector<TrainSequence>& batch, Objective objective);
  // What a pass leaves on the device for the step's statistics. Read once
  // (ReadTotals), after the optimizer's kernels are queued: each read makes
  // the host wait for the GPU, which then runs dry while the host queues
  // the next kernels.
  struct PassTotals {
    torch::Tensor sums;       // float64 [7]: loss, entropy, kl, clipped, ratio, trained tokens, tokens
    torch::Tensor grad_norm;  // float64 scalar, before clipping; undefined when nothing trains
  };
  // Drops the gradients, runs forward and backward over `mbs`, sums the
  // gradients and statistics over ranks.
  absl::StatusOr<PassTotals> Pass(std::vector<MicroBatch>& mbs, Objective objective);
  // The statistics of `totals` (one read from the device).
  StepStats ReadTotals(const PassTotals& totals, Objective objective) const;
  // Scales the gradients as clip_grad_norm_ does (by min(1, clip / (norm +
  // 1e-6))), without waiting for the norm where this LibTorch allows.
  void ClipGradients(const torch::Tensor& grad_norm);
  // Fills micro-batch log-probabilities (old or reference) without gradients.
  void FillLogprobs(std::vector<MicroBatch>& mbs, bool reference);
  torch::Tensor SelectedHidden(const MicroBatch& mb, bool with_segments);
  void OptimizerStep(double lr);
  // The trained tensors to / from one safetensors file (checkpoints,
  // snapshots).
  absl::Status WriteTrainable(const std::string& file) const;
  absl::Status LoadTrainable(const std::string& file);

  TrainerOptions options_;
  ClockInterface* clock_;
  SingleProcess single_;
  DistributedInterface* dist_;
  policy::Placement placement_;
  bool autocast_ = false;
  std::unique_ptr<policy::CausalLm> model_;
  std::unique_ptr<policy::CausalLm> reference_;  // full fine-tune with kl_coef > 0
  // AdamW state of each trainable parameter, in Trainable() order.
  std::vector<torch::Tensor> exp_avg_, exp_avg_sq_;
  std::unique_ptr<GradientBuckets> buckets_;  // world_size > 1, reduce_bucket_mb > 0
  int64_t step_ = 0;
  Phase phase_;
};

}  // namespace crl::trainer

#endif  // CRL_SERVICES_TRAINER_TRAINER_H_
