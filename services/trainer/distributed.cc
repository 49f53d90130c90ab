#include "services/trainer/distributed.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"

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

constexpr int64_t kLeftMark = int64_t{1} << 40;  // added to a rank's counter when it leaves

std::string BeatKey(int rank) { return absl::StrCat("beat/", rank); }

// This rank's beats in the store, and the other ranks' read back (a thread
// of its own, on a connection of its own: a collective blocked in the store
// must not stop the beats).
class Heartbeat {
 public:
  Heartbeat(c10::intrusive_ptr<c10d::Store> store, std::string where, const DistributedOptions& o)
      : store_(std::move(store)), where_(std::move(where)), options_(o), watch_(o.world_size, o.rank) {
    if (options_.heartbeat_seconds > 0) thread_ = std::thread([this] { Run(); });
  }
  ~Heartbeat() { Stop(); }

  void Stop() {
    if (!stop_.HasBeenNotified()) stop_.Notify();
    if (thread_.joinable()) thread_.join();
  }

  // The goodbye: rank 0 then waits (a few beats at most) for the others',
  // since its store goes with it.
  void Leave() {
    if (stop_.HasBeenNotified()) return;
    leaving_.store(true);
    Stop();
    try {
      store_->add(BeatKey(options_.rank), kLeftMark);
      if (options_.rank != 0) return;
      const absl::Time deadline = absl::Now() + absl::Seconds(3 * std::max(1.0, options_.heartbeat_seconds));
      while (absl::Now() < deadline) {
        bool all = true;
        for (int r = 1; r < options_.world_size && all; ++r) all = store_->add(BeatKey(r), 0) >= kLeftMark;
        if (all) return;
        absl::SleepFor(absl::Milliseconds(50));
      }
    } catch (const std::exception&) {
      // The store is gone already: nobody is left to tell.
    }
  }

  // Why a collective failed, as far as the beats tell: waits a few beats
  // for a rank to fall silent.
  std::string Diagnose() {
    const double beat = std::max(0.05, options_.heartbeat_seconds);
    const absl::Time deadline = absl::Now() + absl::Seconds(4 * beat + 1);
    for (;;) {
      {
        absl::MutexLock lock(&mu_);
        if (!store_error_.empty()) return store_error_;
        const absl::Time now = absl::Now();
        std::vector<int> gone = watch_.Stalled(now, absl::Seconds(2.5 * beat));
        if (!gone.empty()) return watch_.Describe(gone, now) + " (it died or hangs)";
        if (now >= deadline || options_.heartbeat_seconds <= 0) break;
      }
      absl::SleepFor(absl::Milliseconds(100));
    }
    return "every rank still beats: a network fault, or a rank stuck in a collective";
  }

 private:
  void Run() {
    const absl::Duration beat = absl::Seconds(options_.heartbeat_seconds);
    bool reported = false;
    // The first beat at once: a rank that dies early is still known to
    // have started.
    for (bool first = true; first || !stop_.WaitForNotificationWithTimeout(beat); first = false) {
      std::vector<int64_t> beats(options_.world_size, 0);
      std::string error;
      try {
        store_->add(BeatKey(options_.rank), 1);
        for (int r = 0; r < options_.world_size; ++r) {
          const int64_t v = store_->add(BeatKey(r), 0);
          beats[r] = v >= kLeftMark ? PeerWatch::kLeft : v;
        }
      } catch (const std::exception& e) {
        error = absl::StrCat(options_.launcher_hosts_store ? "the launcher is gone" : "rank 0 is gone",
                             ": the rendezvous store ", where_, " does not answer (", e.what(), ")");
      }
      absl::Status lost;
      {
        absl::MutexLock lock(&mu_);
        const absl::Time now = absl::Now();
        if (!error.empty()) {
          if (store_error_.empty()) store_error_ = error;
          lost = absl::UnavailableError(store_error_);
        } else {
          watch_.Observe(beats, now);
          std::vector<int> gone;
          if (options_.peer_timeout_seconds > 0) {
            gone = watch_.Stalled(now, absl::Seconds(options_.peer_timeout_seconds));
          }
          if (!gone.empty()) lost = absl::UnavailableError(watch_.Describe(gone, now));
        }
      }
      if (!lost.ok() && !reported && !leaving_.load() && options_.on_peer_lost) {
        reported = true;
        options_.on_peer_lost(lost);
      }
      if (!error.empty()) return;  // a broken connection stays broken
    }
  }

  c10::intrusive_ptr<c10d::Store> store_;
  const std::string where_;
  const DistributedOptions options_;
  absl::Notification stop_;
  std::atomic<bool> leaving_{false};
  absl::Mutex mu_;
  PeerWatch watch_ ABSL_GUARDED_BY(mu_);
  std::string store_error_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

// A c10d process group of either backend (both have allreduce and
// broadcast over tensor lists returning Work).
template <typename Group>
class C10dDistributed : public DistributedInterface {
 public:
  C10dDistributed(c10::intrusive_ptr<Group> group, std::unique_ptr<Heartbeat> heartbeat, int rank,
                  int world, torch::Device device)
      : group_(std::move(group)), heartbeat_(std::move(heartbeat)), rank_(rank), world_(world),
        device_(device) {}
  int rank() const override { return rank_; }
  int world_size() const override { return world_; }
  void Leave() override { heartbeat_->Leave(); }

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

  std::unique_ptr<PendingReduce> StartAllReduceSum(torch::Tensor flat) override {
    auto pending = std::make_unique<Started>(this);
    pending->status = Guarded("all-reduce", [&] {
      std::vector<torch::Tensor> one = {flat};
      pending->work = group_->allreduce(one);
    });
    return pending;
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
  // LibTorch throws (c10::Error, std::runtime_error) from collectives; the
  // error gains the name of the rank that is gone, when the beats know it.
  template <typename F>
  absl::Status Guarded(const char* what, F&& f) {
    try {
      f();
      return absl::OkStatus();
    } catch (const std::exception& e) {
      return absl::UnavailableError(
          absl::StrCat("rank ", rank_, ": ", what, " failed: ", heartbeat_->Diagnose(), " [", e.what(), "]"));
    }
  }

  struct Started : PendingReduce {
    explicit Started(C10dDistributed* d) : dist(d) {}
    absl::Status Wait() override {
      if (!status.ok() || !work) return status;
      return dist->Guarded("all-reduce", [&] { work->wait(); });
    }
    C10dDistributed* dist;
    absl::Status status;
    // c10d::Work (c10d::ProcessGroup::Work in LibTorch 1.x).
    decltype(std::declval<Group&>().allreduce(std::declval<std::vector<torch::Tensor>&>())) work;
  };

  c10::intrusive_ptr<Group> group_;
  std::unique_ptr<Heartbeat> heartbeat_;
  int rank_, world_;
  torch::Device device_;
};

struct Stores {
  c10::intrusive_ptr<c10d::Store> group;  // the process group's
  std::unique_ptr<Heartbeat> heartbeat;
  bool loopback = false;  // every rank on this host
};

absl::StatusOr<Stores> Rendezvous(const DistributedOptions& o) {
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(o.timeout_seconds * 1000));
  try {
    Stores out;
    c10::intrusive_ptr<c10d::Store> store, beats;
    const size_t colon = o.store.rfind(':');
    int port = 0;
    if (colon != std::string::npos && o.store.find('/') == std::string::npos &&
        absl::SimpleAtoi(o.store.substr(colon + 1), &port)) {
      const std::string host = o.store.substr(0, colon);
      c10d::TCPStoreOptions opts;
      opts.port = static_cast<uint16_t>(port);
      opts.isServer = o.rank == 0 && !o.launcher_hosts_store;
      opts.numWorkers = o.world_size;
      opts.timeout = timeout;
      store = c10::make_intrusive<c10d::TCPStore>(host, opts);
      c10d::TCPStoreOptions client;
      client.port = opts.port;
      client.waitWorkers = false;
      client.timeout = timeout;
      beats = c10::make_intrusive<c10d::TCPStore>(host, client);
      out.loopback = host == "127.0.0.1" || host == "localhost" || host == "::1";
    } else {
      // One FileStore object per file (a second would count as a rank when
      // the file is cleaned up); its operations are short, so the beats
      // share it.
      store = c10::make_intrusive<c10d::FileStore>(o.store, o.world_size);
      beats = store;
      out.loopback = true;
    }
    store->setTimeout(timeout);
    out.group = c10::make_intrusive<c10d::PrefixStore>(o.store_prefix + "crl-trainer", store);
    out.heartbeat = std::make_unique<Heartbeat>(
        c10::make_intrusive<c10d::PrefixStore>(o.store_prefix + "crl-trainer-beats", beats), o.store, o);
    return out;
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat("distributed store ", o.store, ": ", e.what()));
  }
}

#endif

}  // namespace

std::unique_ptr<PendingReduce> SingleProcess::StartAllReduceSum(torch::Tensor) {
  struct Done : PendingReduce {
    absl::Status Wait() override { return absl::OkStatus(); }
  };
  return std::make_unique<Done>();
}

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
    auto stores = Rendezvous(o);
    if (!stores.ok()) return stores.status();
    try {
      auto opts = c10d::ProcessGroupGloo::Options::create();
      opts->timeout = std::chrono::milliseconds(static_cast<int64_t>(o.timeout_seconds * 1000));
      // Across hosts: the interface named as for torch (GLOO_SOCKET_IFNAME),
      // else the address this host's name resolves to.
      const char* ifname = std::getenv("GLOO_SOCKET_IFNAME");
      opts->devices.push_back(
          ifname != nullptr && *ifname != '\0' ? c10d::ProcessGroupGloo::createDeviceForInterface(ifname)
          : stores->loopback                    ? c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1")
                                                : c10d::ProcessGroupGloo::createDefaultDevice());
      auto group = c10::make_intrusive<c10d::ProcessGroupGloo>(stores->group, o.rank, o.world_size, opts);
      return std::unique_ptr<DistributedInterface>(new C10dDistributed<c10d::ProcessGroupGloo>(
          group, std::move(stores->heartbeat), o.rank, o.world_size, torch::kCPU));
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
    auto stores = Rendezvous(o);
    if (!stores.ok()) return stores.status();
    try {
      auto opts = c10d::ProcessGroupNCCL::Options::create();
      opts->timeout = std::chrono::milliseconds(static_cast<int64_t>(o.timeout_seconds * 1000));
      auto group = c10::make_intrusive<c10d::ProcessGroupNCCL>(stores->group, o.rank, o.world_size, opts);
      return std::unique_ptr<DistributedInterface>(new C10dDistributed<c10d::ProcessGroupNCCL>(
          group, std::move(stores->heartbeat), o.rank, o.world_size, torch::Device(torch::kCUDA, o.gpu())));
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
