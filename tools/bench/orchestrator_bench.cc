// crl-bench-orchestrator: the orchestrator's own cost with every service
// answering at once (in-process stand-ins; what is measured is the run
// executor and the store): one sample-only round of --tasks groups of
// --group completions each, i.e. tasks x group candidates stored before any
// is scored (the queue), then scored --parallel at a time. Prints the peak
// RSS, the store's write latency (RecordScored p50/p99/max) and candidates
// per second (docs/benchmarks.md). --inline_kb K: each task travels inline
// (Task.files, as `crl run submit` sends it) as one file of K KiB, distinct
// per task, instead of a path.
//
//   build/bin/crl-bench-orchestrator --group 2500 --tasks 4 [--store sqlite:/tmp/b.db|postgresql://...]
//   build/bin/crl-bench-orchestrator --group 40 --tasks 250 --inline_kb 4
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/options.h"
#include "services/orchestrator/open_store.h"
#include "services/orchestrator/run_executor.h"

namespace {

using namespace crl;  // NOLINT: a benchmark's main
namespace v1 = crl::v1;

// What the store left in `dir` (database, WAL, content files).
double DiskMiB(const std::string& dir) {
  std::error_code ec;
  uintmax_t bytes = 0;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec); !ec && it != decltype(it)(); it.increment(ec)) {
    if (it->is_regular_file(ec)) bytes += it->file_size(ec);
  }
  return bytes / 1048576.0;
}

double PeakRssMiB() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024.0;
}

// A completion of realistic size: ~2 KB of text, 600 tokens with logprobs.
constexpr int kTokens = 600;

class Prompt final : public PromptClientInterface {
 public:
  absl::StatusOr<v1::BuildPromptResponse> BuildPrompt(const v1::BuildPromptRequest&, const RequestContext&) override {
    v1::BuildPromptResponse r;
    r.set_prompt(std::string(1500, 'p'));
    return r;
  }
  absl::StatusOr<v1::ParseCompletionResponse> ParseCompletion(const v1::ParseCompletionRequest& req,
                                                             const RequestContext&) override {
    v1::ParseCompletionResponse r;
    r.mutable_candidate()->set_source(req.completion());
    r.mutable_candidate()->set_filename("candidate.cc");
    r.set_analysis("analysis");
    return r;
  }
};

class Sampler final : public SamplerClientInterface {
 public:
  absl::StatusOr<v1::SampleResponse> Sample(const v1::SampleRequest& req, const RequestContext&) override {
    v1::SampleResponse r;
    for (int i = 0; i < req.num_completions(); ++i) {
      v1::Completion* c = r.add_completions();
      c->set_text(absl::StrCat("// completion ", i, "\n", std::string(2000, 'x')));
      for (int t = 0; t < kTokens; ++t) {
        c->add_token_ids(t);
        c->add_token_logprobs(-0.5f);
      }
      c->set_policy_version("0");
    }
    return r;
  }
  absl::StatusOr<v1::ListPoliciesResponse> ListPolicies(const RequestContext&) override {
    return v1::ListPoliciesResponse();
  }
};

class Worker final : public WorkerClientInterface {
 public:
  absl::StatusOr<v1::CompileResponse> Compile(const v1::CompileRequest&, const RequestContext&) override {
    return v1::CompileResponse();
  }
  absl::StatusOr<v1::EvaluateResponse> Evaluate(const v1::EvaluateRequest&, const RequestContext&) override {
    v1::EvaluateResponse r;
    r.set_verdict(v1::VERDICT_OK);
    r.set_artifact_id("artifact");
    return r;
  }
  absl::StatusOr<v1::MeasureResponse> Measure(const v1::MeasureRequest&, const RequestContext&) override {
    return v1::MeasureResponse();
  }
  absl::StatusOr<v1::MeasurePairResponse> MeasurePair(const v1::MeasurePairRequest&, const RequestContext&) override {
    return v1::MeasurePairResponse();
  }
  absl::StatusOr<v1::WorkerInfo> GetWorkerInfo(const RequestContext&) override { return v1::WorkerInfo(); }
};

class Timing final : public TimingClientInterface {
 public:
  absl::StatusOr<v1::TimeResponse> Time(const v1::TimeRequest&, const RequestContext&) override {
    v1::TimeResponse r;
    r.set_verdict(v1::VERDICT_OK);
    r.set_speedup(1.1);
    return r;
  }
  absl::StatusOr<v1::Baseline> GetBaseline(const v1::GetBaselineRequest&, const RequestContext&) override {
    return v1::Baseline();
  }
  absl::StatusOr<v1::RewardResult> ComputeReward(const v1::ComputeRewardRequest&, const RequestContext&) override {
    return v1::RewardResult();
  }
};

// The store, with RecordScored timed.
class TimedStore final : public orchestrator::StoreInterface {
 public:
  explicit TimedStore(orchestrator::StoreInterface* s) : s_(s) {}
  absl::StatusOr<v1::Run> CreateRun(const v1::Run& r, bool* c) override { return s_->CreateRun(r, c); }
  absl::StatusOr<v1::Run> GetRun(const std::string& id) override { return s_->GetRun(id); }
  absl::Status PutRun(const v1::Run& r) override { return s_->PutRun(r); }
  absl::StatusOr<std::vector<v1::Run>> ListRuns(v1::RunState st, int l, const std::string& a) override {
    return s_->ListRuns(st, l, a);
  }
  absl::StatusOr<v1::RunEvent> AppendEvent(v1::RunEvent e) override { return s_->AppendEvent(std::move(e)); }
  absl::StatusOr<std::vector<v1::RunEvent>> EventsAfter(const std::string& id, int64_t a, int l) override {
    return s_->EventsAfter(id, a, l);
  }
  absl::StatusOr<v1::RunEvent> RecordScored(const v1::Variant& v, const v1::Run& r, v1::RunEvent e) override {
    const auto start = std::chrono::steady_clock::now();
    auto out = s_->RecordScored(v, r, std::move(e));
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    absl::MutexLock lock(&mu_);
    writes_ms_.push_back(ms);
    return out;
  }
  absl::Status PutVariant(const std::string& id, const v1::Variant& v) override { return s_->PutVariant(id, v); }
  absl::StatusOr<std::optional<v1::Variant>> GetVariant(const std::string& id, const std::string& k) override {
    return s_->GetVariant(id, k);
  }
  absl::StatusOr<std::vector<v1::Variant>> Variants(const std::string& id, const std::string& t) override {
    return s_->Variants(id, t);
  }
  absl::StatusOr<std::vector<v1::Variant>> GroupVariants(const std::string& id, const std::string& g) override {
    return s_->GroupVariants(id, g);
  }
  absl::Status PutGroup(const std::string& id, const v1::StoredGroup& g) override { return s_->PutGroup(id, g); }
  absl::StatusOr<std::optional<v1::StoredGroup>> GetGroup(const std::string& id, const std::string& g) override {
    return s_->GetGroup(id, g);
  }
  absl::StatusOr<v1::HackCase> RecordHackCase(const v1::HackCase& c) override { return s_->RecordHackCase(c); }
  absl::StatusOr<std::vector<v1::HackCase>> HackCases(const std::string& kind, const std::string& task,
                                                     int limit) override {
    return s_->HackCases(kind, task, limit);
  }
  absl::StatusOr<std::optional<v1::HackCase>> GetHackCase(const std::string& id) override {
    return s_->GetHackCase(id);
  }
  std::vector<double> writes() {
    absl::MutexLock lock(&mu_);
    return writes_ms_;
  }

 private:
  orchestrator::StoreInterface* s_;
  absl::Mutex mu_;
  std::vector<double> writes_ms_;
};

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(p * (v.size() - 1))];
}

}  // namespace

int main(int argc, char** argv) {
  int group = 2500, tasks = 4, parallel = 8, inline_kb = 0;
  std::string store_flag;
  OptionSet flags("crl-bench-orchestrator", "Peak memory and store write latency of one round, services stubbed.");
  flags.Add("group", &group, "completions per group (per task)");
  flags.Add("tasks", &tasks, "groups in the round");
  flags.Add("parallel", &parallel, "candidates scored at once per group");
  flags.Add("store", &store_flag, "sqlite:PATH or postgresql://... (default: SQLite in a temporary directory)");
  flags.Add("inline_kb", &inline_kb, "each task inline, one file of this many KiB (0: a path)");
  if (int rc = flags.ParseForMain(argc, argv); rc >= 0) return rc;
  const std::string dir = (std::filesystem::temp_directory_path() / absl::StrCat("crl-bench-orch-", getpid())).string();
  auto store = orchestrator::OpenStore(store_flag, dir);
  if (!store.ok()) {
    std::fprintf(stderr, "%s\n", store.status().ToString().c_str());
    return 1;
  }
  TimedStore timed(store->get());
  Prompt prompt;
  Sampler sampler;
  Worker worker;
  Timing timing;
  orchestrator::WorkerPool pool({{"w", &worker}}, 1 << 20, RealClock::Get());
  orchestrator::Services services{&prompt, &sampler, &pool, &timing, nullptr, nullptr};
  orchestrator::ExecutorOptions eo;
  eo.parallel_candidates = parallel;
  eo.parallel_groups = tasks;
  v1::Run run;
  run.set_run_id(absl::StrCat("bench-", getpid(), "-", absl::ToUnixNanos(absl::Now())));
  run.set_state(v1::RUN_STATE_QUEUED);
  run.set_created_at(absl::ToUnixSeconds(absl::Now()));
  v1::RunSpec* spec = run.mutable_spec();
  for (int t = 0; t < tasks; ++t) {
    v1::Task* task = spec->add_tasks();
    task->set_name(absl::StrCat("t", t));
    task->set_format(v1::TASK_FORMAT_NATIVE);
    if (inline_kb <= 0) {
      task->set_path(absl::StrCat("/bench/t", t));
      continue;
    }
    v1::File* file = task->add_files();
    file->set_path("model.py");
    std::string text;
    while (text.size() < static_cast<size_t>(inline_kb) * 1024) {
      absl::StrAppend(&text, "    x = torch.relu(x) * ", t, " + ", text.size(), "  # task ", t, "\n");
    }
    file->set_content(text);
  }
  spec->set_backend(v1::BACKEND_HOST);
  spec->set_group_size(group);
  spec->set_training("none");
  v1::Stage* stage = spec->add_stages();
  stage->set_kind("sample-only");
  stage->set_rounds(1);
  bool created;
  if (!timed.CreateRun(run, &created).ok()) return 1;
  const double before = PeakRssMiB();
  orchestrator::RunExecutor executor(services, &timed, RealClock::Get(), eo, nullptr);
  std::atomic<bool> stopping{false};
  const auto start = std::chrono::steady_clock::now();
  auto end = executor.Execute(run, RequestContext::Background(), stopping);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!end.ok() || end->state() != v1::RUN_STATE_SUCCEEDED) {
    std::fprintf(stderr, "run: %s\n", end.ok() ? end->DebugString().c_str() : end.status().ToString().c_str());
    return 1;
  }
  const auto w = timed.writes();
  std::printf(
      "store %s: %d queued candidates (%d groups x %d): peak RSS %.0f MiB (%.0f before the run), "
      "%.0f candidates/s, RecordScored p50 %.2f ms p99 %.2f ms max %.1f ms over %zu writes; %.1f MiB on disk\n",
      store_flag.empty() ? "sqlite (tmp)" : store_flag.substr(0, store_flag.find(':')).c_str(), tasks * group, tasks,
      group, PeakRssMiB(), before, end->candidates() / seconds, Percentile(w, 0.5), Percentile(w, 0.99),
      Percentile(w, 1.0), w.size(), DiskMiB(dir));
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return 0;
}
