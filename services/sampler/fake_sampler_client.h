// A SamplerClientInterface for tests of crl-sampler's clients (the
// orchestrator): completions are scripted per call (a queue) or, when the
// queue is empty, "completion <k> of <prompt>" with made-up token ids;
// requests are recorded. Thread-safe.
#ifndef CRL_SERVICES_SAMPLER_FAKE_SAMPLER_CLIENT_H_
#define CRL_SERVICES_SAMPLER_FAKE_SAMPLER_CLIENT_H_

#include <algorithm>
#include <deque>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "services/sampler/sampler_client.h"

namespace crl {

class FakeSamplerClient final : public SamplerClientInterface {
 public:
  // The next Sample answer.
  void Push(absl::StatusOr<v1::SampleResponse> response) {
    absl::MutexLock lock(&mu_);
    scripted_.push_back(std::move(response));
  }
  void set_version(const std::string& v) {
    absl::MutexLock lock(&mu_);
    version_ = v;
  }

  // Each Sample call waits (up to 10 s) until `n` calls are in flight at
  // once: a test of callers that must sample concurrently.
  void HoldUntilConcurrent(int n) {
    absl::MutexLock lock(&mu_);
    hold_until_ = n;
  }
  // The most Sample calls that were in flight at once.
  int max_concurrent() const {
    absl::MutexLock lock(&mu_);
    return max_concurrent_;
  }

  absl::StatusOr<v1::SampleResponse> Sample(const v1::SampleRequest& request,
                                            const RequestContext&) override {
    absl::MutexLock lock(&mu_);
    requests_.push_back(request);
    ++in_flight_;
    max_concurrent_ = std::max(max_concurrent_, in_flight_);
    auto enough = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return max_concurrent_ >= hold_until_; };
    mu_.AwaitWithTimeout(absl::Condition(&enough), absl::Seconds(10));
    --in_flight_;
    if (!scripted_.empty()) {
      auto r = std::move(scripted_.front());
      scripted_.pop_front();
      return r;
    }
    v1::SampleResponse r;
    r.set_policy_version(version_);
    const std::string prompt =
        request.messages_size() > 0 ? request.messages(request.messages_size() - 1).content() : request.prompt();
    for (int k = 0; k < std::max(1, request.num_completions()); ++k) {
      auto* c = r.add_completions();
      c->set_text(absl::StrCat("completion ", k, " of ", prompt));
      c->add_token_ids(k + 1);
      c->add_token_logprobs(-1.0f);
      c->set_finish_reason("stop");
      c->set_policy_version(version_);
    }
    return r;
  }
  absl::StatusOr<v1::ListPoliciesResponse> ListPolicies(const RequestContext&) override {
    absl::MutexLock lock(&mu_);
    ++list_calls_;
    v1::ListPoliciesResponse r;
    auto* p = r.add_policies();
    p->set_name("fake");
    p->set_kind("fake");
    p->set_version(version_);
    return r;
  }

  std::vector<v1::SampleRequest> requests() const {
    absl::MutexLock lock(&mu_);
    return requests_;
  }
  // ListPolicies calls so far.
  int list_calls() const {
    absl::MutexLock lock(&mu_);
    return list_calls_;
  }

 private:
  mutable absl::Mutex mu_;
  std::deque<absl::StatusOr<v1::SampleResponse>> scripted_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::SampleRequest> requests_ ABSL_GUARDED_BY(mu_);
  std::string version_ ABSL_GUARDED_BY(mu_) = "0";
  int hold_until_ ABSL_GUARDED_BY(mu_) = 0;
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  int max_concurrent_ ABSL_GUARDED_BY(mu_) = 0;
  int list_calls_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace crl

#endif  // CRL_SERVICES_SAMPLER_FAKE_SAMPLER_CLIENT_H_
