// A scripted TimingClientInterface for tests of crl-timing's clients: Time
// answers come from a queue the test fills, requests are recorded, rewards
// are the real pure function. Thread-safe.
#ifndef CRL_SERVICES_TIMING_FAKE_TIMING_CLIENT_H_
#define CRL_SERVICES_TIMING_FAKE_TIMING_CLIENT_H_

#include <deque>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "lib/reward/rewards.h"
#include "services/timing/timing_client.h"

namespace crl {

class FakeTimingClient final : public TimingClientInterface {
 public:
  // The next Time answer; an empty queue answers UNAVAILABLE.
  void Push(absl::StatusOr<v1::TimeResponse> response) {
    absl::MutexLock lock(&mu_);
    times_.push_back(std::move(response));
  }
  void SetBaseline(v1::Baseline baseline) {
    absl::MutexLock lock(&mu_);
    baseline_ = std::move(baseline);
  }

  absl::StatusOr<v1::TimeResponse> Time(const v1::TimeRequest& request,
                                        const RequestContext&) override {
    absl::MutexLock lock(&mu_);
    time_requests_.push_back(request);
    if (times_.empty()) return absl::UnavailableError("fake timing: no scripted answer left");
    absl::StatusOr<v1::TimeResponse> r = std::move(times_.front());
    times_.pop_front();
    return r;
  }
  absl::StatusOr<v1::Baseline> GetBaseline(const v1::GetBaselineRequest&,
                                           const RequestContext&) override {
    absl::MutexLock lock(&mu_);
    return baseline_;
  }
  absl::StatusOr<v1::RewardResult> ComputeReward(const v1::ComputeRewardRequest& request,
                                                 const RequestContext&) override {
    return reward::ComputeReward(request);
  }

  std::vector<v1::TimeRequest> time_requests() const {
    absl::MutexLock lock(&mu_);
    return time_requests_;
  }

 private:
  mutable absl::Mutex mu_;
  std::deque<absl::StatusOr<v1::TimeResponse>> times_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::TimeRequest> time_requests_ ABSL_GUARDED_BY(mu_);
  v1::Baseline baseline_ ABSL_GUARDED_BY(mu_);
};

}  // namespace crl

#endif  // CRL_SERVICES_TIMING_FAKE_TIMING_CLIENT_H_
