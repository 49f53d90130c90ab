// The judge on suspicious rewards (docs/hacks.md), after CUDA-L1's
// adversarial checker: a candidate whose trusted speedup jumps past the
// run's best on its task by the spec's factor, or past its ceiling, is shown
// to a model (any OpenAI-compatible endpoint: a user's vLLM, a hosted model)
// with the reference, the evidence and the most similar known hacks, and the
// model says whether it cheats. Its answer decides the reward:
//
//   honest     the reward stands;
//   cheat      withheld, FLAG_JUDGED_CHEAT, and a case in the hack database;
//   undecided  (the judge down, timed out, no verdict in its answer) held:
//              REWARD_STATUS_HELD, not a zero, not trained on; the run goes on.
//
// SuspicionGate says when to ask; JudgeInterface asks (OpenAiJudge over
// HTTP, FakeJudge in fake_judge.h).
#ifndef CRL_SERVICES_ORCHESTRATOR_JUDGE_H_
#define CRL_SERVICES_ORCHESTRATOR_JUDGE_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/context.h"
#include "common/http_client.h"
#include "crl/v1/orchestrator.pb.h"
#include "lib/prompt/template.h"

namespace crl::orchestrator {

// What a judge is shown.
struct JudgeCase {
  std::string task_name;
  // The task's reference code (best effort: ReferenceText).
  std::string reference;
  // The scored candidate: its code, speedup, flags and evidence.
  v1::Variant candidate;
  // Why it is suspicious.
  std::string trigger;
  // Similar cases from the hack database (hacks::MostSimilar).
  std::vector<v1::HackCase> examples;
};

// Thread-safe.
class JudgeInterface {
 public:
  virtual ~JudgeInterface() = default;
  // Always a Judgement: "honest", "cheat", or "undecided" with `error`
  // saying why (never an error status: a judge that fails holds a reward,
  // it does not fail a run).
  virtual v1::Judgement Judge(const JudgeCase& c, const RequestContext& context) = 0;
};

// The judge's answer read: the last line of the form "VERDICT: CHEAT" or
// "VERDICT: HONEST" (any case, optional markdown around it) decides; the
// text before it is the reasoning. No such line: undecided.
v1::Judgement ParseJudgeAnswer(const std::string& answer);

// The reference of `task` as text for the judge: its inline files, or the
// files at its path (a KernelBench .py, a native task's task.yaml and
// reference sources), at most `max_bytes`; a note saying why when none can
// be read.
std::string ReferenceText(const v1::Task& task, size_t max_bytes = 16384);

struct OpenAiJudgeOptions {
  // The endpoint's base ("http://vllm:8000/v1") or its chat completions URL.
  std::string url;
  std::string model;
  // Sent as a bearer token when not empty.
  std::string api_key;
  absl::Duration timeout = absl::Seconds(120);
  int max_tokens = 1024;
};

// The names the judge's template may use.
const std::vector<std::string>& JudgeTemplateNames();

class OpenAiJudge final : public JudgeInterface {
 public:
  // `template_path`: the judge's prompt (prompts/judge/judge.tmpl); an
  // error names the file and line. `http` must outlive the judge.
  static absl::StatusOr<std::unique_ptr<OpenAiJudge>> Create(HttpClientInterface* http, OpenAiJudgeOptions options,
                                                             const std::string& template_path);
  v1::Judgement Judge(const JudgeCase& c, const RequestContext& context) override;

 private:
  OpenAiJudge(HttpClientInterface* http, OpenAiJudgeOptions options, prompt::PromptTemplate tmpl)
      : http_(http), options_(std::move(options)), template_(std::move(tmpl)) {}
  HttpClientInterface* http_;
  OpenAiJudgeOptions options_;
  prompt::PromptTemplate template_;
};

// Per run: the best trusted speedup per task so far, and whether a new one
// is suspicious under the spec's JudgeSpec. Thread-safe.
class SuspicionGate {
 public:
  explicit SuspicionGate(v1::JudgeSpec spec) : spec_(std::move(spec)) {}
  // Whether the spec asks for judging at all.
  bool active() const { return spec_.jump_factor() > 0 || spec_.ceiling() > 0; }
  // "" when `speedup` on `task` is not suspicious; else why it is.
  std::string Trigger(const std::string& task, double speedup) const;
  // A speedup that now counts as the task's (trusted and rewarded, or
  // cleared by the judge).
  void Accept(const std::string& task, double speedup);

 private:
  v1::JudgeSpec spec_;
  mutable absl::Mutex mu_;
  std::map<std::string, double> best_ ABSL_GUARDED_BY(mu_);
};

// Applies a judgement to a scored variant: stored on it; "cheat" withholds
// the reward and raises FLAG_JUDGED_CHEAT; anything but "honest" holds it.
void ApplyJudgement(const v1::Judgement& judgement, v1::Variant* v);

}  // namespace crl::orchestrator

#endif  // CRL_SERVICES_ORCHESTRATOR_JUDGE_H_
