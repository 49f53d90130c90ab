// Data-parallel gradients summed while the backward pass still runs, as
// PyTorch DDP's reducer does. Every trainable gradient is a view of one of a
// few flat buckets (so nothing is copied into or out of an exchange), and a
// bucket's all-reduce starts as soon as the pass's last backward has
// accumulated every gradient in it: the hook on the gradient accumulators
// queues it, and a sender thread of its own starts it, so the backward's
// launches never wait for a collective's (the host is barely ahead of the
// GPU in a backward pass). Buckets start in one fixed order on every
// rank (a collective library needs that): bucket k only after bucket k - 1,
// and Finish starts those whose gradients no backward reached.
//
//   GradientBuckets buckets(params, dist, 25 << 20);
//   buckets.Zero();                       // before the first backward
//   ... backward of every micro-batch but the last ...
//   buckets.Arm(); last_loss.backward();  // reductions start during it
//   CRL_RETURN_IF_ERROR(buckets.Finish());
//
// Buckets follow the parameters in reverse (the order backward reaches
// them). A gradient must be accumulated once in the armed backward: one
// accumulated twice (a parameter used both inside and outside a reentrant
// checkpoint) may have been sent already, and Finish says so.
#ifndef CRL_SERVICES_TRAINER_GRAD_BUCKETS_H_
#define CRL_SERVICES_TRAINER_GRAD_BUCKETS_H_

#include <torch/torch.h>

#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "services/trainer/distributed.h"

namespace crl::trainer {

class GradientBuckets {
 public:
  // `params`: float32 leaf tensors that require gradients, each once, on
  // one device (Supports says whether they are). `dist` must outlive this.
  GradientBuckets(std::vector<std::pair<std::string, torch::Tensor>> params, DistributedInterface* dist,
                  int64_t bucket_bytes);
  ~GradientBuckets();
  GradientBuckets(const GradientBuckets&) = delete;
  GradientBuckets& operator=(const GradientBuckets&) = delete;

  // Whether `params` can share buckets: distinct float32 leaves on one
  // device (other dtypes keep the exchange after the backward, which sums
  // in float32).
  static bool Supports(const std::vector<std::pair<std::string, torch::Tensor>>& params);
  // Whether these are still the parameters it was built for.
  bool Holds(const std::vector<std::pair<std::string, torch::Tensor>>& params) const;

  // Begins a pass: every gradient a view of its bucket (again, where
  // something replaced it), all zero, nothing queued.
  void Zero();
  // The next backward is the pass's last: its accumulated gradients start
  // their buckets' reductions.
  void Arm();
  // Starts the buckets not yet started, waits for all, disarms. The first
  // error of a reduction, or FAILED_PRECONDITION naming a gradient that was
  // accumulated again after its bucket was queued.
  absl::Status Finish();

  int buckets() const;
  // Buckets queued during this pass's armed backward, before Finish (what
  // overlaps with it).
  int started_early() const;

  struct State;  // shared with the hooks on the gradient accumulators

 private:
  std::shared_ptr<State> state_;
  std::vector<std::pair<std::string, torch::Tensor>> params_;
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators_;  // kept: hooks live on them
  std::thread sender_;  // starts the queued buckets' all-reduces
};

}  // namespace crl::trainer

#endif  // CRL_SERVICES_TRAINER_GRAD_BUCKETS_H_
