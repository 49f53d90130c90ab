#include "services/trainer/grad_buckets.h"

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace crl::trainer {

struct GradientBuckets::State {
  DistributedInterface* dist = nullptr;
  std::vector<std::string> names;
  std::vector<int> bucket_of;        // per parameter
  std::vector<int64_t> offset;       // per parameter, in its bucket
  std::vector<torch::Tensor> flats;  // per bucket
  std::vector<int> size;             // parameters per bucket
  absl::Mutex mu;
  bool armed ABSL_GUARDED_BY(mu) = false;
  std::vector<int> waiting ABSL_GUARDED_BY(mu);       // per bucket: gradients not yet accumulated
  std::vector<char> accumulated ABSL_GUARDED_BY(mu);  // per parameter, in the armed backward
  // Buckets [0, queued) may start, in order; the sender has started [0, started).
  int queued ABSL_GUARDED_BY(mu) = 0;
  int started ABSL_GUARDED_BY(mu) = 0;
  int early ABSL_GUARDED_BY(mu) = 0;  // queued during the armed backward
  bool stop ABSL_GUARDED_BY(mu) = false;
  std::vector<std::unique_ptr<PendingReduce>> pending ABSL_GUARDED_BY(mu);
  std::string twice ABSL_GUARDED_BY(mu);  // a gradient accumulated after its bucket was queued

  // The autograd engine's thread: parameter i's gradient is accumulated.
  // Only queues: starting a collective costs the host tens of microseconds,
  // and the backward's launches (the host barely ahead of the GPU) would
  // wait for it.
  void Accumulated(int i) {
    absl::MutexLock lock(&mu);
    if (!armed) return;
    const int b = bucket_of[i];
    if (accumulated[i]) {
      if (b < queued && twice.empty()) twice = names[i];
      return;
    }
    accumulated[i] = 1;
    --waiting[b];
    while (queued < static_cast<int>(flats.size()) && waiting[queued] == 0) {
      ++queued;
      ++early;
    }
  }
  // The sender thread: starts the queued buckets, in order.
  void Send() {
    for (;;) {
      torch::Tensor flat;
      {
        absl::MutexLock lock(&mu);
        mu.Await(absl::Condition(
            +[](State* s) ABSL_NO_THREAD_SAFETY_ANALYSIS { return s->stop || s->started < s->queued; }, this));
        if (started >= queued) return;  // stopping, nothing left
        flat = flats[started];
      }
      std::unique_ptr<PendingReduce> p = dist->StartAllReduceSum(flat);
      absl::MutexLock lock(&mu);
      pending.push_back(std::move(p));
      ++started;
    }
  }
};

namespace {

// Runs after a leaf's AccumulateGrad node: its .grad now holds this
// backward's contribution.
class AccumulatedHook : public torch::autograd::FunctionPostHook {
 public:
  AccumulatedHook(std::weak_ptr<GradientBuckets::State> state, int index)
      : state_(std::move(state)), index_(index) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                            const torch::autograd::variable_list&) override {
    if (auto s = state_.lock()) s->Accumulated(index_);
    return outputs;
  }

 private:
  std::weak_ptr<GradientBuckets::State> state_;
  int index_;
};

}  // namespace

bool GradientBuckets::Supports(const std::vector<std::pair<std::string, torch::Tensor>>& params) {
  if (params.empty()) return false;
  std::set<const void*> seen;
  for (const auto& [name, p] : params) {
    if (!p.is_leaf() || !p.requires_grad() || p.scalar_type() != torch::kFloat32 ||
        p.device() != params[0].second.device() || !seen.insert(p.unsafeGetTensorImpl()).second) {
      return false;
    }
  }
  return true;
}

GradientBuckets::GradientBuckets(std::vector<std::pair<std::string, torch::Tensor>> params,
                                 DistributedInterface* dist, int64_t bucket_bytes)
    : state_(std::make_shared<State>()), params_(std::move(params)) {
  State& s = *state_;
  s.dist = dist;
  const int n = static_cast<int>(params_.size());
  s.bucket_of.assign(n, 0);
  s.offset.assign(n, 0);
  const auto options = params_.front().second.options().requires_grad(false);
  const int64_t item = params_.front().second.element_size();
  // Last parameter first: the order backward reaches them.
  int64_t elements = 0;
  auto close = [&] {
    if (elements == 0) return;
    s.flats.push_back(torch::zeros({elements}, options));
    elements = 0;
  };
  for (int i = n - 1; i >= 0; --i) {
    const int64_t numel = params_[i].second.numel();
    if (elements > 0 && (elements + numel) * item > bucket_bytes) close();
    if (elements == 0) s.size.push_back(0);
    s.bucket_of[i] = static_cast<int>(s.size.size()) - 1;
    s.offset[i] = elements;
    ++s.size.back();
    elements += numel;
  }
  close();
  for (int i = 0; i < n; ++i) {
    s.names.push_back(params_[i].first);
    auto acc = torch::autograd::impl::grad_accumulator(params_[i].second);
    acc->add_post_hook(std::make_unique<AccumulatedHook>(state_, i));
    accumulators_.push_back(std::move(acc));
  }
  {
    absl::MutexLock lock(&s.mu);
    s.accumulated.assign(n, 0);
  }
  sender_ = std::thread([state = state_] { state->Send(); });
}

GradientBuckets::~GradientBuckets() {
  // The hooks stay on the accumulators (LibTorch 1.x cannot remove them);
  // without the state they do nothing.
  {
    absl::MutexLock lock(&state_->mu);
    state_->armed = false;
    state_->stop = true;
  }
  sender_.join();
}

bool GradientBuckets::Holds(const std::vector<std::pair<std::string, torch::Tensor>>& params) const {
  if (params.size() != params_.size()) return false;
  for (size_t i = 0; i < params.size(); ++i) {
    if (!params[i].second.is_same(params_[i].second)) return false;
  }
  return true;
}

void GradientBuckets::Zero() {
  torch::NoGradGuard no_grad;
  State& s = *state_;
  {  // a new pass (the sender is idle: the last pass's Finish waited for it)
    absl::MutexLock lock(&s.mu);
    s.queued = 0;
    s.started = 0;
    s.early = 0;
    s.pending.clear();
    s.twice.clear();
  }
  for (auto& flat : s.flats) flat.zero_();
  for (size_t i = 0; i < params_.size(); ++i) {
    torch::Tensor& p = params_[i].second;
    const torch::Tensor& flat = s.flats[s.bucket_of[i]];
    const torch::Tensor& g = p.grad();
    if (g.defined() && g.sizes() == p.sizes() &&
        static_cast<const char*>(g.data_ptr()) ==
            static_cast<const char*>(flat.data_ptr()) + s.offset[i] * flat.element_size()) {
      continue;
    }
    p.mutable_grad() = flat.narrow(0, s.offset[i], p.numel()).view(p.sizes());
  }
}

void GradientBuckets::Arm() {
  State& s = *state_;
  absl::MutexLock lock(&s.mu);
  s.armed = true;
  s.waiting = s.size;
  std::fill(s.accumulated.begin(), s.accumulated.end(), 0);
}

absl::Status GradientBuckets::Finish() {
  State& s = *state_;
  std::vector<std::unique_ptr<PendingReduce>> pending;
  std::string twice;
  {
    absl::MutexLock lock(&s.mu);
    s.armed = false;
    s.queued = static_cast<int>(s.flats.size());  // with no backward armed: all of them
    s.mu.Await(absl::Condition(
        +[](State* st) ABSL_NO_THREAD_SAFETY_ANALYSIS { return st->started == st->queued; }, &s));
    pending.swap(s.pending);
    twice = s.twice;
  }
  absl::Status status;
  for (auto& p : pending) status.Update(p->Wait());
  if (!status.ok()) return status;
  if (!twice.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "gradient of ", twice, " was accumulated twice in the last backward, after its bucket was "
        "sent to be summed (turn the overlap off: reduce_bucket_mb 0)"));
  }
  return absl::OkStatus();
}

int GradientBuckets::buckets() const { return static_cast<int>(state_->flats.size()); }

int GradientBuckets::started_early() const {
  absl::MutexLock lock(&state_->mu);
  return state_->early;
}

}  // namespace crl::trainer
