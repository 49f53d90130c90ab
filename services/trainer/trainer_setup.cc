#include "services/trainer/trainer_setup.h"

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace crl::trainer {

void BindTrainerOptions(OptionSet* set, TrainerServiceOptions* o) {
  TrainerOptions& t = o->trainer;
  set->Add("model", &t.model_dir, "the starting policy: a Hugging Face model directory (required)");
  set->Add("out_dir", &t.out_dir, "where checkpoints/ and published policy/ versions go (required)");
  set->Add("device", &t.device, "auto, cpu, cuda or cuda:N");
  set->Add("precision", &t.precision,
           "auto (float32 weights, bfloat16 autocast on CUDA), float32, bfloat16");
  set->Add("lora", &t.lora, "train LoRA adapters instead of every weight");
  set->Add("lora_rank", &t.lora_config.rank, "LoRA rank");
  set->Add("lora_alpha", &t.lora_config.alpha, "LoRA alpha (scale alpha / rank)");
  set->Add("lora_dropout", &t.lora_config.dropout, "LoRA dropout on the adapter input");
  set->Add("lora_targets", &t.lora_config.targets,
           "projections with adapters: q_proj k_proj v_proj o_proj gate_proj up_proj down_proj");
  OptimizerOptions& op = t.optimizer;
  set->Add("lr", &op.lr, "AdamW learning rate");
  set->Add("beta1", &op.beta1, "AdamW beta1");
  set->Add("beta2", &op.beta2, "AdamW beta2");
  set->Add("adam_eps", &op.eps, "AdamW epsilon");
  set->Add("weight_decay", &op.weight_decay, "AdamW decoupled weight decay");
  set->Add("warmup_steps", &op.warmup_steps, "linear warm-up steps");
  set->Add("total_steps", &op.total_steps, "cosine decay ends here (0: constant after warm-up)");
  set->Add("min_lr_ratio", &op.min_lr_ratio, "the cosine floor as a fraction of lr");
  set->Add("grad_clip", &op.grad_clip, "largest global gradient norm (0: off)");
  set->Add("clip_low", &t.policy_loss.clip_low, "PPO ratio clip below: 1 - clip_low");
  set->Add("clip_high", &t.policy_loss.clip_high, "PPO ratio clip above: 1 + clip_high (DAPO)");
  set->Add("kl_coef", &t.policy_loss.kl_coef, "k3 KL to the starting policy (0: no reference)");
  set->Add("loss_aggregation", &o->aggregation, "token-mean or sequence-mean");
  set->Add("normalize_std", &o->advantages.normalize_std,
           "divide advantages by the group's std (false: Dr. GRPO)");
  set->Add("advantage_clip", &o->advantages.clip, "clip |advantage| to this (0: off; CUDA-L1: 1.5)");
  set->Add("updates_per_batch", &t.updates_per_batch, "optimizer steps per policy-gradient batch");
  set->Add("recompute_old_logprobs", &t.recompute_old_logprobs,
           "recompute old log-probabilities instead of using the sampler's");
  set->Add("micro_batch_tokens", &t.micro_batch_tokens, "rows x length per micro-batch");
  set->Add("max_seq_len", &t.max_seq_len, "longest prompt + completion accepted");
  set->Add("pack_supervised", &t.pack_supervised, "pack supervised sequences into max_seq_len rows");
  set->Add("activation_checkpointing", &t.activation_checkpointing,
           "recompute each layer in the backward pass (memory for time)");
  set->Add("reduce_bucket_mb", &t.reduce_bucket_mb,
           "data parallel: MiB per gradient bucket summed during the backward (0: one exchange after it)");
  set->Add("logprob_chunk_rows", &t.logprob_chunk_rows,
           "rows per output-embedding chunk (0: automatic)");
  set->Add("keep_checkpoints", &t.keep_checkpoints, "checkpoints kept (the newest)");
  set->Add("keep_published", &t.keep_published, "published versions kept (the newest)");
  set->Add("seed", &t.seed, "seed of LoRA initialisation and dropout");
  LoopOptions& l = o->loop;
  set->Add("groups_per_step", &l.groups_per_step, "groups per policy-gradient step");
  set->Add("examples_per_step", &l.examples_per_step, "examples per supervised step");
  set->Add("max_staleness", &l.max_staleness, "versions a group may lag (negative: any)");
  set->Add("checkpoint_every", &l.checkpoint_every, "steps between checkpoints (0: on request)");
  set->Add("publish_every", &l.publish_every, "steps between published versions");
  set->Add("max_queued_groups", &l.max_queued_groups, "queued groups before RESOURCE_EXHAUSTED");
  set->Add("max_queued_examples", &l.max_queued_examples,
           "queued examples before RESOURCE_EXHAUSTED");
  set->Add("resume", &l.resume, "continue from out_dir's latest checkpoint");
  DistributedOptions& d = o->dist;
  set->Add("rank", &d.rank, "data-parallel rank of this process (else $RANK)");
  set->Add("world_size", &d.world_size, "data-parallel processes (else $WORLD_SIZE)");
  set->Add("local_rank", &d.local_rank, "this rank's GPU on its host (else $LOCAL_RANK, else the rank)");
  set->Add("dist_backend", &d.backend, "gloo (CPU) or nccl (CUDA)");
  set->Add("dist_store", &d.store,
           "rendezvous: a shared file path, or HOST:PORT of rank 0 (else $MASTER_ADDR:$MASTER_PORT)");
  set->Add("dist_timeout", &d.timeout_seconds, "seconds a collective may take");
  set->Add("dist_heartbeat", &d.heartbeat_seconds, "seconds between a rank's beats in the store");
  set->Add("dist_peer_timeout", &d.peer_timeout_seconds,
           "seconds without a beat before a rank is gone and this one exits (0: never)");
}

absl::Status TrainerParts::StartLoop(const LoopOptions& options, TrainerMetrics* metrics,
                                     ClockInterface* clock) {
  LoopOptions o = options;
  // Rank 0 takes the submissions: it journals them (journal.h).
  if (o.journal_dir.empty() && trainer->rank() == 0) o.journal_dir = trainer->options().out_dir + "/journal";
  loop = std::make_unique<TrainingLoop>(runner.get(), intake.get(), o, metrics, clock);
  return loop->Start();
}

absl::StatusOr<std::unique_ptr<TrainerParts>> BuildTrainerParts(const TrainerServiceOptions& o,
                                                                 ClockInterface* clock) {
  TrainerOptions t = o.trainer;
  if (!ParseAggregation(o.aggregation, &t.aggregation)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "loss_aggregation: '", o.aggregation, "' is not token-mean or sequence-mean"));
  }
  if (o.loop.groups_per_step < 1) return absl::InvalidArgumentError("groups_per_step: must be at least 1");
  if (o.loop.examples_per_step < 1) {
    return absl::InvalidArgumentError("examples_per_step: must be at least 1");
  }
  if (o.advantages.clip < 0) return absl::InvalidArgumentError("advantage_clip: must be >= 0");
  if (t.device == "auto" && o.dist.backend == "nccl") {
    t.device = absl::StrCat("cuda:", o.dist.gpu());
  }
  auto parts = std::make_unique<TrainerParts>();
  CRL_ASSIGN_OR_RETURN(parts->dist, ConnectDistributed(o.dist));
  CRL_ASSIGN_OR_RETURN(parts->trainer, Trainer::Create(t, clock, parts->dist.get()));
  parts->runner = std::make_unique<StepRunner>(parts->trainer.get(), parts->dist.get());
  CRL_ASSIGN_OR_RETURN(parts->tokenizer, policy::LoadTokenizer(t.model_dir));
  const int vocab = parts->trainer->config().vocab_size;
  if (parts->tokenizer->vocab_size() > vocab) {
    return absl::InvalidArgumentError(absl::StrCat(t.model_dir, ": the tokenizer has ",
                                                   parts->tokenizer->vocab_size(),
                                                   " ids, the model's vocab_size is ", vocab));
  }
  IntakeOptions intake;
  intake.advantages = o.advantages;
  intake.max_seq_len = t.max_seq_len;
  intake.vocab_size = vocab;
  parts->intake = std::make_unique<Intake>(parts->tokenizer.get(),
                                           policy::LoadChatFormat(t.model_dir), intake);
  return parts;
}

}  // namespace crl::trainer
