// Two LibTorch conveniences the trainer's translation units share
// (trainer.cc: steps; trainer_state.cc: checkpoints, snapshots, publishing).
// Internal to crl_trainer_core.
#ifndef CRL_SERVICES_TRAINER_TORCH_CALL_H_
#define CRL_SERVICES_TRAINER_TORCH_CALL_H_

#include <exception>

#include <torch/torch.h>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace crl::trainer {

// LibTorch reports failures by throwing; the trainer answers with a Status.
template <typename F>
auto Torch(const char* what, F&& f) -> absl::StatusOr<decltype(f())> {
  try {
    return f();
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat(what, ": ", e.what()));
  }
}

// The generator of `device` (CPU or one CUDA device).
inline at::Generator DefaultGenerator(torch::Device device) {
  return at::globalContext().defaultGenerator(device);
}

}  // namespace crl::trainer

#endif  // CRL_SERVICES_TRAINER_TORCH_CALL_H_
