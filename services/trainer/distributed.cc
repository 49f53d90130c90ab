#include "services/trainer/distributed.h"

#include <chrono>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

#if defined(CRL_WITH_GLOO) || defined(CRL_WITH_NCCL)
#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#endif
#ifdef CRL_WITH_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#ifdef CRL_WITH_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace crl::trainer {
namespace {

#if defined(CRL_WITH_GLOO) || defined(CRL_WITH_NCCL)

// LibTorch throws (c10::Error, std::runtime_error) from collectives.
template <typename F>
absl::Status Guarded(const char* what, F&& f) {
  try {
    f();
    return absl::OkStatus();
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat(what, ": ", e.what()));
  }
}

// A c10d process group of either backend (both have allreduce and
// broadcast over tensor lists returning Work).
template <typename Group>
class C10dDistributed : public DistributedInterface {
 public:
  C10dDistributed(c10::intrusive_ptr<Group> group, int rank, int world, torch::Device device)
      : group_(std::move(group)), rank_(rank), world_(world), device_(device) {}
  int rank() const override { return rank_; }
  int world_size() const override { return world_; }

  absl::Status AllReduceSum(std::vector<torch::Tensor>& tensors) override {
    return Guarded("all-reduce", [&] {
      // One flat buffer per call: fewer, larger messages.
      std::vector<torch::Tensor> flat = {
          torch::cat([&] {
            std::vector<torch::Tensor> parts;
            for (auto& t : tensors) parts.push_back(t.detach().reshape({-1}).to(device_, torch::kFloat32));
            return parts;
          }())};
      group_->allreduce(flat)->wait();
      int64_t at = 0;
      for (auto& t : tensors) {
        const int64_t n = t.numel();
        t.copy_(flat[0].narrow(0, at, n).view(t.sizes()));
        at += n;
      }
    });
  }

  absl::Status Broadcast(std::string* bytes) override {
    return Guarded("broadcast", [&] {
      std::vector<torch::Tensor> size = {
          torch::tensor({static_cast<int64_t>(bytes->size())}, torch::kLong).to(device_)};
      group_->broadcast(size)->wait();
      const int64_t n = size[0].to(torch::kCPU).item<int64_t>();
      torch::Tensor buf = torch::empty({n}, torch::kUInt8);
      if (rank_ == 0) std::memcpy(buf.data_ptr(), bytes->data(), n);
      std::vector<torch::Tensor> data = {buf.to(device_)};
      group_->broadcast(data)->wait();
      torch::Tensor host = data[0].to(torch::kCPU).contiguous();
      bytes->assign(static_cast<const char*>(host.data_ptr()), n);
    });
  }

 private:
  c10::intrusive_ptr<Group> group_;
  int rank_, world_;
  torch::Device device_;
};

absl::StatusOr<c10::intrusive_ptr<c10d::Store>> Rendezvous(const DistributedOptions& o) {
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(o.timeout_seconds * 1000));
  try {
    c10::intrusive_ptr<c10d::Store> store;
    const size_t colon = o.store.rfind(':');
    int port = 0;
    if (colon != std::string::npos && o.store.find('/') == std::string::npos &&
        absl::SimpleAtoi(o.store.substr(colon + 1), &port)) {
      c10d::TCPStoreOptions opts;
      opts.port = static_cast<uint16_t>(port);
      opts.isServer = o.rank == 0;
      opts.numWorkers = o.world_size;
      opts.timeout = timeout;
      store = c10::make_intrusive<c10d::TCPStore>(o.store.substr(0, colon), opts);
    } else {
      store = c10::make_intrusive<c10d::FileStore>(o.store, o.world_size);
    }
    store->setTimeout(timeout);
    return c10::intrusive_ptr<c10d::Store>(c10::make_intrusive<c10d::PrefixStore>("crl-trainer", store));
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat("distributed store ", o.store, ": ", e.what()));
  }
}

#endif

}  // namespace

absl::StatusOr<std::unique_ptr<DistributedInterface>> ConnectDistributed(
    const DistributedOptions& o) {
  if (o.world_size < 1) return absl::InvalidArgumentError("world_size: must be at least 1");
  if (o.rank < 0 || o.rank >= o.world_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank: ", o.rank, " is outside [0, world_size = ", o.world_size, ")"));
  }
  if (o.world_size == 1) return std::unique_ptr<DistributedInterface>(new SingleProcess());
  if (o.store.empty()) {
    return absl::InvalidArgumentError("dist_store: a file path or HOST:PORT is needed for world_size > 1");
  }
  if (o.backend == "gloo") {
#ifdef CRL_WITH_GLOO
    auto store = Rendezvous(o);
    if (!store.ok()) return store.status();
    try {
      auto opts = c10d::ProcessGroupGloo::Options::create();
      opts->timeout = std::chrono::milliseconds(static_cast<int64_t>(o.timeout_seconds * 1000));
      opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
      auto group = c10::make_intrusive<c10d::ProcessGroupGloo>(*store, o.rank, o.world_size, opts);
      return std::unique_ptr<DistributedInterface>(new C10dDistributed<c10d::ProcessGroupGloo>(
          group, o.rank, o.world_size, torch::kCPU));
    } catch (const std::exception& e) {
      return absl::UnavailableError(absl::StrCat("gloo process group: ", e.what()));
    }
#else
    return absl::UnimplementedError(
        "backend: this crl-trainer was built without Gloo (install libgloo-dev and rebuild)");
#endif
  }
  if (o.backend == "nccl") {
#ifdef CRL_WITH_NCCL
    auto store = Rendezvous(o);
    if (!store.ok()) return store.status();
    try {
      auto opts = c10d::ProcessGroupNCCL::Options::create();
      opts->timeout = std::chrono::milliseconds(static_cast<int64_t>(o.timeout_seconds * 1000));
      auto group = c10::make_intrusive<c10d::ProcessGroupNCCL>(*store, o.rank, o.world_size, opts);
      return std::unique_ptr<DistributedInterface>(new C10dDistributed<c10d::ProcessGroupNCCL>(
          group, o.rank, o.world_size, torch::Device(torch::kCUDA, o.rank)));
    } catch (const std::exception& e) {
      return absl::UnavailableError(absl::StrCat("nccl process group: ", e.what()));
    }
#else
    return absl::UnimplementedError(
        "backend: this crl-trainer was built without NCCL (build against a CUDA LibTorch)");
#endif
  }
  return absl::InvalidArgumentError(absl::StrCat("backend: '", o.backend, "' is not gloo or nccl"));
}

}  // namespace crl::trainer
