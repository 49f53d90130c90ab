// crl-trainer's parts from one options struct: the process group, the
// trainer, the step runner, the intake and (serving rank 0) the training
// loop. Shared by crl-trainer's main() and StartLocalTrainer.
#ifndef CRL_SERVICES_TRAINER_TRAINER_SETUP_H_
#define CRL_SERVICES_TRAINER_TRAINER_SETUP_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/clock.h"
#include "common/options.h"
#include "lib/policy/tokenizer.h"
#include "services/trainer/distributed.h"
#include "services/trainer/intake.h"
#include "services/trainer/step_runner.h"
#include "services/trainer/trainer.h"
#include "services/trainer/trainer_metrics.h"
#include "services/trainer/training_loop.h"

namespace crl::trainer {

struct TrainerServiceOptions {
  TrainerOptions trainer;
  LoopOptions loop;
  AdvantageOptions advantages;
  DistributedOptions dist;
  // "token-mean" or "sequence-mean" (TrainerOptions::aggregation).
  std::string aggregation = "token-mean";
};

// Binds every option (--model, --out_dir, --lr, --clip_high, --lora, ...,
// --rank, --world_size, --dist_store).
void BindTrainerOptions(OptionSet* set, TrainerServiceOptions* options);

struct TrainerParts {
  std::unique_ptr<DistributedInterface> dist;
  // The model directory's tokenizer.json (what text submissions become).
  std::unique_ptr<policy::Tokenizer> tokenizer;
  std::unique_ptr<Trainer> trainer;
  std::unique_ptr<StepRunner> runner;
  std::unique_ptr<Intake> intake;
  std::unique_ptr<TrainingLoop> loop;  // StartLoop()

  // Rank 0 of a service: resumes if asked and starts the training thread.
  // `metrics` (may be null) and `clock` must outlive the parts.
  absl::Status StartLoop(const LoopOptions& options, TrainerMetrics* metrics, ClockInterface* clock);
};

// Joins the process group (every rank must call this), loads the model and
// tokenizer. Errors name the option.
absl::StatusOr<std::unique_ptr<TrainerParts>> BuildTrainerParts(const TrainerServiceOptions& options,
                                                                 ClockInterface* clock);

}  // namespace crl::trainer

#endif  // CRL_SERVICES_TRAINER_TRAINER_SETUP_H_
