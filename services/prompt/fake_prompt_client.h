// A PromptClientInterface for tests of crl-prompt's clients: prompts are
// "prompt <n> for <task name>", parses are scripted (a queue), requests are
// recorded. Thread-safe.
#ifndef CRL_SERVICES_PROMPT_FAKE_PROMPT_CLIENT_H_
#define CRL_SERVICES_PROMPT_FAKE_PROMPT_CLIENT_H_

#include <deque>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "services/prompt/prompt_client.h"

namespace crl {

class FakePromptClient final : public PromptClientInterface {
 public:
  // The next ParseCompletion answer; an empty queue answers UNAVAILABLE.
  void Push(absl::StatusOr<v1::ParseCompletionResponse> parsed) {
    absl::MutexLock lock(&mu_);
    parses_.push_back(std::move(parsed));
  }

  absl::StatusOr<v1::BuildPromptResponse> BuildPrompt(const v1::BuildPromptRequest& request,
                                                      const RequestContext&) override {
    absl::MutexLock lock(&mu_);
    build_requests_.push_back(request);
    v1::BuildPromptResponse r;
    r.set_prompt(absl::StrCat("prompt ", build_requests_.size(), " for ", request.task().name()));
    auto* m = r.add_messages();
    m->set_role("user");
    m->set_content(r.prompt());
    r.set_template_version("fake@00000000");
    return r;
  }
  absl::StatusOr<v1::ParseCompletionResponse> ParseCompletion(
      const v1::ParseCompletionRequest& request, const RequestContext&) override {
    absl::MutexLock lock(&mu_);
    parse_requests_.push_back(request);
    if (parses_.empty()) return absl::UnavailableError("fake prompt: no scripted parse left");
    auto r = std::move(parses_.front());
    parses_.pop_front();
    return r;
  }

  std::vector<v1::BuildPromptRequest> build_requests() const {
    absl::MutexLock lock(&mu_);
    return build_requests_;
  }
  std::vector<v1::ParseCompletionRequest> parse_requests() const {
    absl::MutexLock lock(&mu_);
    return parse_requests_;
  }

 private:
  mutable absl::Mutex mu_;
  std::deque<absl::StatusOr<v1::ParseCompletionResponse>> parses_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::BuildPromptRequest> build_requests_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::ParseCompletionRequest> parse_requests_ ABSL_GUARDED_BY(mu_);
};

}  // namespace crl

#endif  // CRL_SERVICES_PROMPT_FAKE_PROMPT_CLIENT_H_
