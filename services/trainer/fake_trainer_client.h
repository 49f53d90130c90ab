// A TrainerClientInterface for tests of crl-trainer's clients (the
// orchestrator): submissions are recorded; each group or example batch
// makes a new version when `step_every` groups have arrived; versions are
// streamed to watchers. Thread-safe.
#ifndef CRL_SERVICES_TRAINER_FAKE_TRAINER_CLIENT_H_
#define CRL_SERVICES_TRAINER_FAKE_TRAINER_CLIENT_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "services/trainer/trainer_client.h"

namespace crl {

class FakeTrainerClient : public TrainerClientInterface {
 public:
  explicit FakeTrainerClient(int step_every = 1) : step_every_(step_every) {}

  // The status the next call answers instead of working (then OK again).
  void FailNext(absl::Status status) {
    absl::MutexLock lock(&mu_);
    fail_next_ = std::move(status);
  }

  absl::StatusOr<v1::SubmitGroupResponse> SubmitGroup(const v1::SubmitGroupRequest& request,
                                                      const RequestContext&) override {
    absl::MutexLock lock(&mu_);
    if (!fail_next_.ok()) return Take();
    groups_.push_back(request);
    v1::SubmitGroupResponse r;
    r.set_used(request.completions_size());
    r.set_outcome(v1::GROUP_OUTCOME_QUEUED);
    if (++pending_ >= step_every_) Step();
    r.set_policy_version(std::to_string(step_));
    return r;
  }
  absl::StatusOr<v1::SubmitExamplesResponse> SubmitExamples(const v1::SubmitExamplesRequest& request,
                                                            const RequestContext&) override {
    absl::MutexLock lock(&mu_);
    if (!fail_next_.ok()) return Take();
    for (const auto& e : request.examples()) examples_.push_back(e);
    Step();
    v1::SubmitExamplesResponse r;
    r.set_accepted(request.examples_size());
    r.set_policy_version(std::to_string(step_));
    return r;
  }
  absl::StatusOr<v1::PolicyVersion> GetPolicyVersion(const RequestContext&) override {
    absl::MutexLock lock(&mu_);
    return Version();
  }
  absl::StatusOr<v1::CheckpointResponse> Checkpoint(const RequestContext&) override {
    absl::MutexLock lock(&mu_);
    v1::CheckpointResponse r;
    r.set_step(step_);
    r.set_checkpoint_uri(absl::StrCat("fake://checkpoint/", step_));
    return r;
  }
  absl::StatusOr<v1::FlushResponse> Flush(const RequestContext&) override {
    absl::MutexLock lock(&mu_);
    ++flushes_;
    if (pending_ > 0) Step();
    v1::FlushResponse r;
    *r.mutable_version() = Version();
    return r;
  }
  // Records the request; a restored snapshot makes a new version.
  absl::StatusOr<v1::PolicyVersion> BeginPhase(const v1::BeginPhaseRequest& request, const RequestContext&) override {
    absl::MutexLock lock(&mu_);
    if (!fail_next_.ok()) return Take();
    phases_.push_back(request);
    if (!request.restore_snapshot().empty()) ++step_;
    return Version();
  }
  absl::Status WatchPolicyVersions(
      const RequestContext& context,
      const std::function<void(const v1::PolicyVersion&)>& on_version) override {
    int64_t seen = -1;
    while (true) {
      v1::PolicyVersion v;
      {
        absl::MutexLock lock(&mu_);
        auto changed = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return step_ != seen; };
        mu_.AwaitWithTimeout(absl::Condition(&changed), absl::Milliseconds(50));
        if (step_ == seen) {
          if (absl::Status s = context.Check(); !s.ok()) return s;
          continue;
        }
        seen = step_;
        v = Version();
      }
      on_version(v);
    }
  }

  std::vector<v1::SubmitGroupRequest> groups() const {
    absl::MutexLock lock(&mu_);
    return groups_;
  }
  std::vector<v1::Example> examples() const {
    absl::MutexLock lock(&mu_);
    return examples_;
  }
  std::vector<v1::BeginPhaseRequest> phases() const {
    absl::MutexLock lock(&mu_);
    return phases_;
  }

  // Flush calls so far.
  int flushes() const {
    absl::MutexLock lock(&mu_);
    return flushes_;
  }

 private:
  void Step() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    ++step_;
    pending_ = 0;
  }
  v1::PolicyVersion Version() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    v1::PolicyVersion v;
    v.set_version(std::to_string(step_));
    v.set_step(step_);
    v.set_checkpoint_uri(absl::StrCat("fake://policy/v", step_));
    if (step_ > 0) {  // the last step's statistics, made up but step-dependent
      v1::TrainStepStats* st = v.mutable_stats();
      st->set_objective(groups_.empty() ? "supervised" : "policy-gradient");
      st->set_loss(1.0 / static_cast<double>(step_));
      st->set_kl(0.001 * static_cast<double>(step_));
      st->set_entropy(2.0 - 0.1 * static_cast<double>(step_));
      st->set_grad_norm(0.5);
      st->set_learning_rate(3e-5);
    }
    return v;
  }
  absl::Status Take() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    absl::Status s = std::move(fail_next_);
    fail_next_ = absl::OkStatus();
    return s;
  }

  const int step_every_;
  mutable absl::Mutex mu_;
  std::vector<v1::SubmitGroupRequest> groups_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::Example> examples_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::BeginPhaseRequest> phases_ ABSL_GUARDED_BY(mu_);
  int pending_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t step_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status fail_next_ ABSL_GUARDED_BY(mu_);
  int flushes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace crl

#endif  // CRL_SERVICES_TRAINER_FAKE_TRAINER_CLIENT_H_
