// A world of `ranks` in one process, for tests: every other rank is taken
// to hold the same tensors as this one, so a sum multiplies by the world's
// size. Records the sizes of the reductions started without waiting, in
// order, and which of them have been waited for.
#ifndef CRL_SERVICES_TRAINER_FAKE_DISTRIBUTED_H_
#define CRL_SERVICES_TRAINER_FAKE_DISTRIBUTED_H_

#include <memory>
#include <string>
#include <vector>

#include "services/trainer/distributed.h"

namespace crl::trainer {

class FakeDistributed : public DistributedInterface {
 public:
  explicit FakeDistributed(int ranks) : ranks_(ranks) {}
  int rank() const override { return 0; }
  int world_size() const override { return ranks_; }
  absl::Status AllReduceSum(std::vector<torch::Tensor>& tensors) override {
    torch::NoGradGuard no_grad;
    for (auto& t : tensors) t.mul_(ranks_);
    return absl::OkStatus();
  }
  std::unique_ptr<PendingReduce> StartAllReduceSum(torch::Tensor flat) override {
    started.push_back(flat.numel());
    waited.push_back(false);
    return std::make_unique<Pending>(this, flat, started.size() - 1);
  }
  absl::Status Broadcast(std::string*) override { return absl::OkStatus(); }

  std::vector<int64_t> started;  // numel of each reduction started, in order
  std::vector<bool> waited;      // per reduction started

 private:
  struct Pending : PendingReduce {
    Pending(FakeDistributed* d, torch::Tensor t, size_t i) : dist(d), flat(std::move(t)), index(i) {}
    absl::Status Wait() override {
      torch::NoGradGuard no_grad;
      flat.mul_(dist->ranks_);
      dist->waited[index] = true;
      return absl::OkStatus();
    }
    FakeDistributed* dist;
    torch::Tensor flat;
    size_t index;
  };
  int ranks_;
};

}  // namespace crl::trainer

#endif  // CRL_SERVICES_TRAINER_FAKE_DISTRIBUTED_H_
