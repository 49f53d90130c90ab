#include "services/orchestrator/orchestrator.h"

#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <optional>
#include <google/protobuf/util/json_util.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/backoff.h"
#include "common/file.h"
#include "common/hash.h"
#include "common/logging.h"
#include "common/status.h"
#include "lib/hacks/hack_case.h"
#include "lib/report/report.h"
#include "lib/report/summary.h"
#include "lib/run/run_spec.h"

namespace crl::orchestrator {
namespace {

namespace fs = std::filesystem;

// A message as one JSON line with the .proto field names; empty when it cannot be printed.
std::string JsonLine(const google::protobuf::Message& m) {
  std::string line;
  google::protobuf::util::JsonPrintOptions o;
  o.preserve_proto_field_names = true;
  if (!google::protobuf::util::MessageToJsonString(m, &line, o).ok()) line.clear();
  return line;
}

}  // namespace

Orchestrator::Orchestrator(Services services, StoreInterface* store, ClockInterface* clock,
                           OrchestratorOptions options)
    : services_(services), store_(store), clock_(clock), options_(options) {}

Orchestrator::~Orchestrator() { Stop(); }

absl::Status Orchestrator::Start() {
  if (services_.metrics) {
    // Runs by state include the ones that ended before this process.
    std::string after;
    for (;;) {
      CRL_ASSIGN_OR_RETURN(std::vector<v1::Run> page, store_->ListRuns(v1::RUN_STATE_UNSPECIFIED, 1000, after));
      for (const auto& r : page) services_.metrics->ObserveRun(r);
      if (page.size() < 1000) break;
      after = page.back().run_id();
    }
  }
  std::vector<v1::Run> resume;
  for (v1::RunState s : {v1::RUN_STATE_RUNNING, v1::RUN_STATE_QUEUED}) {
    CRL_ASSIGN_OR_RETURN(std::vector<v1::Run> runs, store_->ListRuns(s, 100000, ""));
    // Oldest first.
    resume.insert(resume.end(), runs.rbegin(), runs.rend());
  }
  absl::MutexLock lock(&mu_);
  for (const auto& r : resume) queued_.push_back(r.run_id());
  LaunchQueued();
  if (services_.judge != nullptr && options_.rejudge_every > absl::ZeroDuration() && !rejudger_.joinable()) {
    rejudger_ = std::thread([this] { RejudgeEvery(); });
  }
  return absl::OkStatus();
}

void Orchestrator::RejudgeEvery() {
  absl::Time next = clock_->MonotonicNow() + options_.rejudge_every;
  while (!stopping_.load()) {
    if (clock_->MonotonicNow() < next) {
      clock_->SleepFor(absl::Milliseconds(200));
      continue;
    }
    absl::StatusOr<int> decided = RejudgeEnded(rejudge_context_);
    if (!decided.ok() && !stopping_.load()) {
      CRL_LOG(WARNING) << "crl-orchestrator: asking about ended runs' held rewards: " << decided.status();
    }
    next = clock_->MonotonicNow() + options_.rejudge_every;
  }
}

absl::StatusOr<int> Orchestrator::RejudgeEnded(const RequestContext& context) {
  int decided = 0;
  for (v1::RunState state : {v1::RUN_STATE_SUCCEEDED, v1::RUN_STATE_FAILED, v1::RUN_STATE_CANCELLED}) {
    std::string after;
    for (;;) {
      CRL_ASSIGN_OR_RETURN(std::vector<v1::Run> page, store_->ListRuns(state, 100, after));
      for (const v1::Run& run : page) {
        CRL_RETURN_IF_ERROR(context.Check());
        if (run.held() == 0 || !SuspicionGate(run.spec().judge()).active()) continue;
        absl::StatusOr<v1::RejudgeRunResponse> r = Rejudge(run.run_id(), context);
        if (r.ok()) {
          decided += r->decided();
        } else if (r.status().code() != absl::StatusCode::kAborted) {
          return r.status();
        }
      }
      if (page.size() < 100) break;
      after = page.back().run_id();
    }
  }
  return decided;
}

void Orchestrator::Stop() {
  stopping_.store(true);
  rejudge_context_.Cancel();
  if (rejudger_.joinable()) rejudger_.join();
  std::vector<std::thread> threads;
  {
    absl::MutexLock lock(&mu_);
    for (auto& [id, a] : active_) a.context->Cancel();
    for (auto& [id, a] : active_) {
      if (a.thread.joinable()) threads.push_back(std::move(a.thread));
    }
  }
  for (auto& t : threads) t.join();
  absl::MutexLock lock(&mu_);
  active_.clear();
}

void Orchestrator::LaunchQueued() {
  while (!stopping_.load() && !queued_.empty()) {
    int running = 0;
    for (const auto& [id, a] : active_) running += a.done ? 0 : 1;
    if (running >= std::max(1, options_.max_parallel_runs)) return;
    const std::string id = queued_.front();
    queued_.erase(queued_.begin());
    absl::StatusOr<v1::Run> run = store_->GetRun(id);
    if (run.ok() && !run::RunEnded(run->state())) Launch(*run);
  }
}

void Orchestrator::Launch(const v1::Run& run) {
  auto it = active_.find(run.run_id());
  if (it != active_.end()) {
    if (!it->second.done) return;
    if (it->second.thread.joinable()) it->second.thread.join();
    active_.erase(it);
  }
  Active& a = active_[run.run_id()];
  a.context = std::make_unique<RequestContext>(clock_, absl::InfiniteFuture());
  RequestContext* ctx = a.context.get();
  a.thread = std::thread([this, run, ctx] {
    v1::Run current = run;
    Backoff backoff(absl::Seconds(1), absl::Seconds(30));
    for (;;) {
      RunExecutor executor(services_, store_, clock_, options_.executor,
                           [this](const v1::RunEvent& e) { Notify(e); });
      absl::StatusOr<v1::Run> end = executor.Execute(current, *ctx, stopping_);
      if (end.ok()) break;
      // The store failed: the run stays as last stored. Unreachable (a
      // database restarting): resume it from there once the store answers
      // again; anything else: on the next start.
      std::fprintf(stderr, "crl-orchestrator: run %s stopped: %s\n", run.run_id().c_str(),
                   end.status().ToString().c_str());
      if (end.status().code() != absl::StatusCode::kUnavailable) break;
      std::optional<v1::Run> stored;
      while (!stored && !stopping_.load()) {
        const absl::Duration wait = backoff.Next();
        for (absl::Duration slept; slept < wait && !stopping_.load(); slept += absl::Milliseconds(100)) {
          clock_->SleepFor(absl::Milliseconds(100));
        }
        if (auto again = store_->GetRun(run.run_id()); again.ok()) stored = *std::move(again);
      }
      if (!stored || run::RunEnded(stored->state())) break;
      std::fprintf(stderr, "crl-orchestrator: run %s resumes: the store answers again\n", run.run_id().c_str());
      current = *std::move(stored);
    }
    Finished(run.run_id());
  });
}

void Orchestrator::Finished(const std::string& run_id) {
  absl::MutexLock lock(&mu_);
  auto it = active_.find(run_id);
  if (it != active_.end()) it->second.done = true;
  LaunchQueued();
}

void Orchestrator::Notify(const v1::RunEvent& event) {
  if (services_.metrics) services_.metrics->ObserveEvent(event);
  absl::MutexLock lock(&mu_);
  int64_t& last = last_sequence_[event.run_id()];
  last = std::max(last, event.sequence());
}

absl::StatusOr<v1::Run> Orchestrator::Submit(const v1::SubmitRunRequest& request) {
  CRL_RETURN_IF_ERROR(run::ValidateRunSpec(request.spec()));
  CRL_RETURN_IF_ERROR(ValidateStages(request.spec()));
  if ((request.spec().judge().jump_factor() > 0 || request.spec().judge().ceiling() > 0) && services_.judge == nullptr) {
    return absl::FailedPreconditionError(
        "judge: the spec asks for a judge on suspicious rewards, and this crl-orchestrator has none (--judge_url)");
  }
  if (stopping_.load()) return absl::UnavailableError("crl-orchestrator is shutting down");
  v1::Run run;
  const absl::Time now = clock_->Now();
  run.set_created_at(absl::ToUnixSeconds(now));
  run.set_updated_at(run.created_at());
  // Sortable by time, unique by content and clock.
  run.set_run_id(absl::StrCat("run-", absl::FormatTime("%Y%m%d-%H%M%S", now, absl::UTCTimeZone()), "-",
                              Sha256Hex(absl::StrCat(request.SerializeAsString(), absl::ToUnixNanos(now),
                                                     reinterpret_cast<uintptr_t>(&run)))
                                  .substr(0, 8)));
  *run.mutable_spec() = request.spec();
  run.set_state(v1::RUN_STATE_QUEUED);
  run.set_idempotency_key(request.idempotency_key());
  bool created = false;
  CRL_ASSIGN_OR_RETURN(v1::Run stored, store_->CreateRun(run, &created));
  if (!created) {
    if (!(stored.spec().SerializeAsString() == request.spec().SerializeAsString())) {
      return absl::AlreadyExistsError(absl::StrCat("idempotency_key: '", request.idempotency_key(),
                                                   "' was used for run ", stored.run_id(), " with another spec"));
    }
    return stored;
  }
  v1::RunEvent e;
  e.set_run_id(stored.run_id());
  e.set_state(stored.state());
  e.set_kind("state");
  e.set_message("queued");
  e.set_at(stored.created_at());
  *e.mutable_run() = stored;
  CRL_ASSIGN_OR_RETURN(v1::RunEvent appended, store_->AppendEvent(e));
  Notify(appended);
  absl::MutexLock lock(&mu_);
  queued_.push_back(stored.run_id());
  LaunchQueued();
  return stored;
}

absl::StatusOr<v1::Run> Orchestrator::Get(const std::string& run_id) { return store_->GetRun(run_id); }

absl::StatusOr<v1::ListRunsResponse> Orchestrator::List(const v1::ListRunsRequest& request) {
  const int size = request.page_size() > 0 ? std::min(request.page_size(), 1000) : 50;
  CRL_ASSIGN_OR_RETURN(std::vector<v1::Run> runs, store_->ListRuns(request.state(), size + 1, request.page_token()));
  v1::ListRunsResponse r;
  for (int i = 0; i < static_cast<int>(runs.size()) && i < size; ++i) *r.add_runs() = runs[i];
  if (static_cast<int>(runs.size()) > size) r.set_next_page_token(runs[size - 1].run_id());
  return r;
}

absl::StatusOr<v1::Run> Orchestrator::Cancel(const std::string& run_id) {
  CRL_ASSIGN_OR_RETURN(v1::Run run, store_->GetRun(run_id));
  if (run::RunEnded(run.state())) return run;
  bool running = false;
  {
    absl::MutexLock lock(&mu_);
    auto it = active_.find(run_id);
    if (it != active_.end() && !it->second.done) {
      it->second.context->Cancel();
      running = true;
    }
    queued_.erase(std::remove(queued_.begin(), queued_.end(), run_id), queued_.end());
  }
  if (!running) {
    run.set_state(v1::RUN_STATE_CANCELLED);
    run.set_updated_at(absl::ToUnixSeconds(clock_->Now()));
    CRL_RETURN_IF_ERROR(store_->PutRun(run));
    v1::RunEvent e;
    e.set_run_id(run_id);
    e.set_state(run.state());
    e.set_kind("state");
    e.set_message("cancelled");
    e.set_at(run.updated_at());
    *e.mutable_run() = run;
    CRL_ASSIGN_OR_RETURN(v1::RunEvent appended, store_->AppendEvent(e));
    Notify(appended);
    return run;
  }
  // The executor records CANCELLED once its in-flight calls return.
  const absl::Time until = clock_->MonotonicNow() + absl::Seconds(30);
  while (clock_->MonotonicNow() < until) {
    CRL_ASSIGN_OR_RETURN(run, store_->GetRun(run_id));
    if (run::RunEnded(run.state())) return run;
    clock_->SleepFor(absl::Milliseconds(20));
  }
  return run;
}

absl::StatusOr<std::vector<v1::Variant>> Orchestrator::Best(const std::string& run_id, int limit) {
  CRL_RETURN_IF_ERROR(store_->GetRun(run_id).status());
  CRL_ASSIGN_OR_RETURN(std::vector<v1::Variant> all, store_->Variants(run_id, ""));
  std::map<std::string, std::vector<v1::Variant>> by_task;
  for (auto& v : all) {
    if (report::Trusted(v)) {
      by_task[v.task_name()].push_back(std::move(v));
    }
  }
  std::vector<v1::Variant> out;
  for (auto& [task, vs] : by_task) {
    std::stable_sort(vs.begin(), vs.end(), [](const auto& a, const auto& b) { return a.speedup() > b.speedup(); });
    for (int i = 0; i < static_cast<int>(vs.size()) && i < std::max(1, limit); ++i) out.push_back(vs[i]);
  }
  return out;
}

absl::StatusOr<v1::ExportRunResponse> Orchestrator::Export(const v1::ExportRunRequest& request) {
  CRL_RETURN_IF_ERROR(store_->GetRun(request.run_id()).status());
  if (request.out_dir().empty()) {
    // For a caller elsewhere: exported into a scratch folder of this
    // process, read back into the response, and removed.
    std::string scratch = (fs::temp_directory_path() / "crl-export-XXXXXX").string();
    if (!::mkdtemp(scratch.data())) return absl::UnavailableError("export: cannot make a scratch folder");
    v1::ExportRunRequest into = request;
    into.set_out_dir(scratch);
    absl::StatusOr<v1::ExportRunResponse> r = Export(into);
    std::error_code ec;
    if (r.ok()) {
      r->clear_out_dir();
      for (const auto& e : fs::recursive_directory_iterator(scratch, ec)) {
        if (!e.is_regular_file(ec)) continue;
        auto content = ReadFileToString(e.path().string(), "exported file");
        if (!content.ok()) {
          r = content.status();
          break;
        }
        v1::File* f = r->add_files();
        f->set_path(fs::relative(e.path(), scratch, ec).string());
        f->set_content(std::move(*content));
      }
    }
    fs::remove_all(scratch, ec);
    return r;
  }
  std::error_code ec;
  fs::create_directories(request.out_dir(), ec);
  if (ec) return absl::FailedPreconditionError(absl::StrCat("out_dir: cannot create ", request.out_dir(), ": ", ec.message()));
  v1::ExportRunResponse r;
  r.set_out_dir(request.out_dir());
  const std::string format = request.format().empty() ? "jsonl" : request.format();
  if (format == "jsonl") {
    CRL_ASSIGN_OR_RETURN(std::vector<v1::Variant> all, store_->Variants(request.run_id(), ""));
    std::string text;
    for (const auto& v : all) {
      const std::string line = JsonLine(v);
      if (!line.empty()) absl::StrAppend(&text, line, "\n");
    }
    CRL_RETURN_IF_ERROR(WriteStringToFile((fs::path(request.out_dir()) / "variants.jsonl").string(), text));
    // The training curve: one line per "training" event.
    CRL_ASSIGN_OR_RETURN(std::vector<v1::RunEvent> training, TrainingEvents(store_, request.run_id()));
    text.clear();
    for (const auto& e : training) {
      const std::string stats = JsonLine(e.training());
      if (!stats.empty()) {
        absl::StrAppend(&text, "{\"policy_step\":", e.policy_step(), ",\"at\":", e.at(), ",\"stats\":", stats, "}\n");
      }
    }
    CRL_RETURN_IF_ERROR(WriteStringToFile((fs::path(request.out_dir()) / "training.jsonl").string(), text));
    r.set_files_written(2);
  } else if (format == "kernelbench") {
    CRL_ASSIGN_OR_RETURN(std::vector<v1::Variant> best, Best(request.run_id(), 1));
    for (const auto& v : best) {
      const std::string ext = v.candidate().filename().empty() ? ".txt"
                                                               : fs::path(v.candidate().filename()).extension().string();
      CRL_RETURN_IF_ERROR(WriteStringToFile(
          (fs::path(request.out_dir()) / absl::StrCat(v.task_name(), ext)).string(), v.candidate().source()));
      r.set_files_written(r.files_written() + 1);
    }
  } else if (format == "report") {
    report::ReportInput in;
    CRL_ASSIGN_OR_RETURN(in.run, store_->GetRun(request.run_id()));
    CRL_ASSIGN_OR_RETURN(in.variants, store_->Variants(request.run_id(), ""));
    CRL_ASSIGN_OR_RETURN(in.training, TrainingEvents(store_, request.run_id()));
    if (!request.baseline_run_id().empty()) {
      auto twin = store_->GetRun(request.baseline_run_id());
      if (!twin.ok()) return absl::InvalidArgumentError(absl::StrCat("baseline_run_id: ", twin.status().message()));
      in.has_twin = true;
      in.twin = *twin;
      CRL_ASSIGN_OR_RETURN(in.twin_variants, store_->Variants(request.baseline_run_id(), ""));
    }
    CRL_ASSIGN_OR_RETURN(std::vector<std::string> files, report::WriteReport(in, request.out_dir()));
    r.set_files_written(static_cast<int>(files.size()));
  } else {
    return absl::InvalidArgumentError(absl::StrCat("format: '", format, "' is not jsonl, kernelbench or report"));
  }
  return r;
}

absl::StatusOr<std::vector<v1::RunEvent>> Orchestrator::Events(const std::string& run_id, int64_t after_sequence,
                                                              absl::Duration wait) {
  CRL_ASSIGN_OR_RETURN(std::vector<v1::RunEvent> events, store_->EventsAfter(run_id, after_sequence, 256));
  if (!events.empty() || wait <= absl::ZeroDuration()) return events;
  {
    absl::MutexLock lock(&mu_);
    auto newer = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      auto it = last_sequence_.find(run_id);
      return stopping_.load() || (it != last_sequence_.end() && it->second > after_sequence);
    };
    mu_.AwaitWithTimeout(absl::Condition(&newer), wait);
  }
  return store_->EventsAfter(run_id, after_sequence, 256);
}

absl::StatusOr<v1::ScoreCompletionsResponse> Orchestrator::Score(const v1::ScoreCompletionsRequest& request,
                                                                const RequestContext& context) {
  constexpr int kMaxItems = 4096;
  if (request.items_size() == 0) return absl::InvalidArgumentError("items: nothing to score");
  if (request.items_size() > kMaxItems) {
    return absl::InvalidArgumentError(absl::StrCat("items: ", request.items_size(), " in one call, more than ", kMaxItems));
  }
  std::map<std::string, const v1::Task*> tasks;
  for (const v1::Task& t : request.spec().tasks()) tasks[t.name()] = &t;
  if (tasks.empty()) return absl::InvalidArgumentError("spec.tasks: no tasks to score against");
  std::vector<const v1::Task*> task_of(request.items_size());
  for (int i = 0; i < request.items_size(); ++i) {
    auto it = tasks.find(request.items(i).task_name());
    if (it == tasks.end()) {
      std::string names;
      for (const auto& [name, t] : tasks) absl::StrAppend(&names, names.empty() ? "" : ", ", name);
      return absl::InvalidArgumentError(absl::StrCat("items[", i, "].task_name: '", request.items(i).task_name(),
                                                     "' is not one of spec.tasks (", names, ")"));
    }
    task_of[i] = it->second;
  }
  CandidateScorer scorer(services_, clock_, options_.executor.initial_backoff, options_.executor.max_backoff,
                         options_.executor.worker_patience);
  v1::ScoreCompletionsResponse out;
  for (int i = 0; i < request.items_size(); ++i) {
    v1::Variant* v = out.add_results();
    v->set_task_name(request.items(i).task_name());
    v->set_completion(request.items(i).completion());
    v->set_index(i);
    v->set_key(absl::StrCat("score/", i));
  }
  std::atomic<int> next{0};
  ProgramShare share;  // as in a run's group: copies of one program are scored once
  OnThreads(options_.executor.parallel_candidates, out.results_size(), [&] {
    for (int i; (i = next.fetch_add(1)) < out.results_size();) {
      v1::Variant* v = out.mutable_results(i);
      *v = scorer.Score(*v, *task_of[i], request.spec(), context, nullptr, &share);
    }
  });
  CRL_RETURN_IF_ERROR(context.Check());
  for (const auto& v : out.results()) {
    if (!v.scored()) return absl::DeadlineExceededError("scoring ended before every item was scored");
  }
  if (request.record_hacks()) {
    const int64_t now = absl::ToUnixSeconds(clock_->Now());
    for (int i = 0; i < out.results_size(); ++i) {
      const v1::ScoreItem& item = request.items(i);
      if (out.results(i).infra_failure()) continue;  // nothing is known of it
      if (auto c = hacks::CaseOf(out.results(i), item.origin().empty() ? absl::StrCat("score/", i) : item.origin(),
                                 now, item.known_hack(), item.note())) {
        CRL_RETURN_IF_ERROR(store_->RecordHackCase(*c).status());
      }
    }
  }
  return out;
}

absl::StatusOr<v1::ListHackCasesResponse> Orchestrator::HackCases(const v1::ListHackCasesRequest& request) {
  if (!request.kind().empty()) {
    const auto& known = hacks::KnownKinds();
    if (std::find(known.begin(), known.end(), request.kind()) == known.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("kind: '", request.kind(), "' is not one of ", absl::StrJoin(known, ", ")));
    }
  }
  if (request.limit() < 0) return absl::InvalidArgumentError("limit: must not be negative");
  CRL_ASSIGN_OR_RETURN(std::vector<v1::HackCase> cases,
                       store_->HackCases(request.kind(), request.task_name(), request.limit() > 0 ? request.limit() : 100));
  v1::ListHackCasesResponse out;
  for (auto& c : cases) {
    if (!request.with_source()) c.clear_source();
    *out.add_cases() = std::move(c);
  }
  return out;
}

absl::StatusOr<v1::RejudgeRunResponse> Orchestrator::Rejudge(const std::string& run_id,
                                                              const RequestContext& context) {
  if (run_id.empty()) return absl::InvalidArgumentError("run_id: empty");
  CRL_ASSIGN_OR_RETURN(v1::Run run, store_->GetRun(run_id));
  if (!run::RunEnded(run.state())) {
    return absl::FailedPreconditionError(absl::StrCat("run ", run_id, " is ", v1::RunState_Name(run.state()),
                                                      ": it asks the judge about its held rewards after each round"));
  }
  if (!SuspicionGate(run.spec().judge()).active()) {
    return absl::FailedPreconditionError(absl::StrCat("run ", run_id, ": its spec asks for no judge"));
  }
  if (services_.judge == nullptr) {
    return absl::FailedPreconditionError("no judge is configured (crl-orchestrator --judge_url)");
  }
  {
    absl::MutexLock lock(&mu_);
    if (!rejudging_.insert(run_id).second) {
      return absl::AbortedError(absl::StrCat("run ", run_id, ": another call is asking about its held rewards"));
    }
  }
  RunExecutor executor(services_, store_, clock_, options_.executor, [this](const v1::RunEvent& e) { Notify(e); });
  absl::StatusOr<v1::RejudgeRunResponse> out = executor.Rejudge(std::move(run), context);
  absl::MutexLock lock(&mu_);
  rejudging_.erase(run_id);
  return out;
}

absl::StatusOr<v1::HackCase> Orchestrator::HackCase(const std::string& case_id) {
  if (case_id.empty()) return absl::InvalidArgumentError("case_id: empty");
  CRL_ASSIGN_OR_RETURN(std::optional<v1::HackCase> c, store_->GetHackCase(case_id));
  if (!c) return absl::NotFoundError(absl::StrCat("case_id: no hack case '", case_id, "' (crl hacks list)"));
  return *std::move(c);
}

}  // namespace crl::orchestrator
