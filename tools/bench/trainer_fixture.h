// What the trainer benchmarks share (crl-bench-trainer, crl-bench-sync): a
// random model written where a trainer can load it, the options of their
// LoRA, and a batch of GRPO groups over random tokens.
#ifndef CRL_TOOLS_BENCH_TRAINER_FIXTURE_H_
#define CRL_TOOLS_BENCH_TRAINER_FIXTURE_H_

#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "lib/policy/config.h"
#include "lib/policy/model.h"
#include "services/trainer/trainer.h"

namespace crl::bench {

// A model of `config`'s shape with seeded random weights, saved in `dir`
// (in config.torch_dtype): every process and every rank writes the same one.
inline absl::Status WriteRandomModel(const policy::ModelConfig& config, const std::string& dir) {
  torch::manual_seed(0);
  auto model = policy::CausalLm::Init(config, 1, torch::kCPU, torch::kFloat32);
  if (!model.ok()) return model.status();
  return (*model)->Save(dir);
}

// Rank 16 on every projection, as the benchmarks' PyTorch side has it.
inline void UseBenchLora(trainer::TrainerOptions* o) {
  o->lora = true;
  o->lora_config.rank = 16;
  o->lora_config.alpha = 32;
  o->lora_config.targets = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
}

// `sequences` sequences in groups of four over random tokens (seeded), with
// advantages -1.5, -0.5, 0.5, 1.5 within each group.
inline std::vector<trainer::TrainSequence> RandomGroups(int sequences, int prompt_len, int completion_len,
                                                        int64_t vocab_size) {
  std::mt19937 rng(7);
  std::vector<trainer::TrainSequence> batch(sequences);
  for (int i = 0; i < sequences; ++i) {
    auto& s = batch[i];
    s.id = absl::StrCat("g", i / 4);
    for (int t = 0; t < prompt_len; ++t) s.prompt.push_back(rng() % vocab_size);
    for (int t = 0; t < completion_len; ++t) s.completion.push_back(rng() % vocab_size);
    s.advantage = (i % 4) - 1.5;
    s.reward = i % 4;
  }
  return batch;
}

}  // namespace crl::bench

#endif  // CRL_TOOLS_BENCH_TRAINER_FIXTURE_H_
