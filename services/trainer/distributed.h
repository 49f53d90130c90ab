// Data-parallel training: the collectives the trainer needs, behind one
// interface. The real one is LibTorch's c10d process group (Gloo on CPU,
// NCCL on CUDA GPUs: no home-made collective); a single process needs none.
//
// Every rank builds the same global batch (rank 0 broadcasts it in service
// mode, every rank reads the same file offline), trains on its shard with
// weights of the global batch, and the gradients are summed across ranks:
// the update equals one process training on the whole batch.
#ifndef CRL_SERVICES_TRAINER_DISTRIBUTED_H_
#define CRL_SERVICES_TRAINER_DISTRIBUTED_H_

#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "services/trainer/rendezvous.h"

namespace crl::trainer {

// A collective started and not yet finished.
class PendingReduce {
 public:
  virtual ~PendingReduce() = default;
  // Ends it: the tensor holds the sum (on CUDA the current stream waits for
  // it, the host does not). UNAVAILABLE names a rank that is gone.
  virtual absl::Status Wait() = 0;
};

class DistributedInterface {
 public:
  virtual ~DistributedInterface() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  // Sums `tensors` element-wise over the ranks, in place (same shapes on
  // every rank).
  virtual absl::Status AllReduceSum(std::vector<torch::Tensor>& tensors) = 0;
  // Starts summing the contiguous `flat` over the ranks in place, without
  // waiting (what gradient buckets overlap with the backward pass). Every
  // rank starts the same shapes in the same order; a failure to start shows
  // in Wait().
  virtual std::unique_ptr<PendingReduce> StartAllReduceSum(torch::Tensor flat) = 0;
  // Rank 0's `bytes` on every rank.
  virtual absl::Status Broadcast(std::string* bytes) = 0;
  // This rank ends normally: it stops beating and says so, so that no rank
  // takes it for dead (rank 0 waits a moment for the others' goodbyes: its
  // store must outlive them).
  virtual void Leave() {}
};

// World of one: nothing to exchange.
class SingleProcess : public DistributedInterface {
 public:
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  absl::Status AllReduceSum(std::vector<torch::Tensor>&) override { return absl::OkStatus(); }
  std::unique_ptr<PendingReduce> StartAllReduceSum(torch::Tensor) override;
  absl::Status Broadcast(std::string*) override { return absl::OkStatus(); }
};

// A c10d process group for `options` (rendezvous.h), or SingleProcess for a world of one.
// UNIMPLEMENTED when this build has no such backend (Gloo needs
// libgloo-dev, NCCL a CUDA LibTorch); INVALID_ARGUMENT naming the field.
absl::StatusOr<std::unique_ptr<DistributedInterface>> ConnectDistributed(
    const DistributedOptions& options);

}  // namespace crl::trainer

#endif  // CRL_SERVICES_TRAINER_DISTRIBUTED_H_
