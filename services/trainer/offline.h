// crl-trainer --offline FILE.jsonl: training from recorded data without a
// server. Each line is one submission in the protos' JSON form: a
// SubmitGroupRequest (has "completions": policy gradient) or an Example
// (has "completion" or "completion_token_ids": supervised). Lines of one
// kind are batched (groups_per_step groups, examples_per_step examples); a
// change of kind ends a batch. The position in the file is part of every
// checkpoint, so --resume continues exactly where the last one was taken,
// and the result equals an uninterrupted run bit for bit on CPU.
#ifndef CRL_SERVICES_TRAINER_OFFLINE_H_
#define CRL_SERVICES_TRAINER_OFFLINE_H_

#include <atomic>
#include <cstdio>
#include <string>

#include "absl/status/status.h"
#include "services/trainer/intake.h"
#include "services/trainer/step_runner.h"

namespace crl::trainer {

struct OfflineOptions {
  std::string data;  // the JSON-lines file
  int epochs = 1;
  // Stop after this many optimizer steps in total (0: after the epochs).
  int max_steps = 0;
  int groups_per_step = 8;
  int examples_per_step = 32;
  int checkpoint_every = 50;  // steps (0: only at the end)
  bool resume = false;
};

// Trains, checkpoints (every checkpoint_every steps and at the end) and
// publishes the final version. `stop` (may be null), when set, ends the run
// after the current step with a checkpoint. Progress lines go to `log`.
// Errors name the file and line.
absl::Status RunOffline(StepRunner* runner, const Intake& intake, const OfflineOptions& options,
                        const std::atomic<bool>* stop, std::FILE* log);

}  // namespace crl::trainer

#endif  // CRL_SERVICES_TRAINER_OFFLINE_H_
