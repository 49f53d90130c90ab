// crl-trainer inside this process, behind the client interface: the same
// training loop without a server (the CLI and single-process runs).
#ifndef CRL_SERVICES_TRAINER_LOCAL_TRAINER_H_
#define CRL_SERVICES_TRAINER_LOCAL_TRAINER_H_

#include <memory>

#include "absl/status/statusor.h"
#include "services/trainer/trainer_client.h"
#include "services/trainer/trainer_setup.h"

namespace crl {

// Loads the model, resumes when asked and starts the training thread. A
// world of one only (data parallelism needs crl-trainer processes).
absl::StatusOr<std::unique_ptr<TrainerClientInterface>> StartLocalTrainer(
    const trainer::TrainerServiceOptions& options);

}  // namespace crl

#endif  // CRL_SERVICES_TRAINER_LOCAL_TRAINER_H_
