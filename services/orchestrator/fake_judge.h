// A JudgeInterface for tests: answers each call with the next scripted
// judgement (undecided, "no answer scripted", when none is left) and keeps
// what it was shown. Thread-safe.
#ifndef CRL_SERVICES_ORCHESTRATOR_FAKE_JUDGE_H_
#define CRL_SERVICES_ORCHESTRATOR_FAKE_JUDGE_H_

#include <deque>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "services/orchestrator/judge.h"

namespace crl::orchestrator {

class FakeJudge final : public JudgeInterface {
 public:
  void Push(const std::string& decision, const std::string& reasoning = "") {
    absl::MutexLock l(&mu_);
    v1::Judgement j;
    j.set_decision(decision);
    j.set_reasoning(reasoning);
    j.set_model("fake");
    script_.push_back(j);
  }
  v1::Judgement Judge(const JudgeCase& c, const RequestContext&) override {
    absl::MutexLock l(&mu_);
    shown_.push_back(c);
    if (script_.empty()) {
      v1::Judgement j;
      j.set_decision("undecided");
      j.set_error("no answer scripted");
      return j;
    }
    v1::Judgement j = script_.front();
    script_.pop_front();
    return j;
  }
  std::vector<JudgeCase> shown() const {
    absl::MutexLock l(&mu_);
    return shown_;
  }

 private:
  mutable absl::Mutex mu_;
  std::deque<v1::Judgement> script_ ABSL_GUARDED_BY(mu_);
  std::vector<JudgeCase> shown_ ABSL_GUARDED_BY(mu_);
};

}  // namespace crl::orchestrator

#endif  // CRL_SERVICES_ORCHESTRATOR_FAKE_JUDGE_H_
