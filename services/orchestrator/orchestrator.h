// The runs of one orchestrator: submitted runs are stored first, then
// executed (each in its own thread, at most max_parallel_runs at once,
// the rest QUEUED); on start, every QUEUED or RUNNING run in the store is
// resumed. Watchers wait for a run's events by sequence number. gRPC-free:
// orchestrator_service.cc is the edge.
#ifndef CRL_SERVICES_ORCHESTRATOR_ORCHESTRATOR_H_
#define CRL_SERVICES_ORCHESTRATOR_ORCHESTRATOR_H_

#include <atomic>
#include <map>
#include <set>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "services/orchestrator/run_executor.h"
#include "services/orchestrator/scorer.h"
#include "services/orchestrator/store.h"

namespace crl::orchestrator {

struct OrchestratorOptions {
  int max_parallel_runs = 4;
  ExecutorOptions executor;
  // With a judge: how often ended runs' held rewards are asked about again
  // (RejudgeEnded, on a thread of Start's); zero: only on request.
  absl::Duration rejudge_every = absl::ZeroDuration();
};

// Thread-safe.
class Orchestrator {
 public:
  Orchestrator(Services services, StoreInterface* store, ClockInterface* clock, OrchestratorOptions options);
  ~Orchestrator();

  // Resumes the stored runs that had not ended.
  absl::Status Start();
  // Stops the executors; their runs stay RUNNING in the store.
  void Stop();

  // Validates, stores and queues the run; a repeated idempotency key returns
  // the run it created first (and starts nothing).
  absl::StatusOr<v1::Run> Submit(const v1::SubmitRunRequest& request);
  absl::StatusOr<v1::Run> Get(const std::string& run_id);
  absl::StatusOr<v1::ListRunsResponse> List(const v1::ListRunsRequest& request);
  // Cancels a queued or running run (its in-flight evaluations are cancelled
  // with it); a run that already ended is returned as it is.
  absl::StatusOr<v1::Run> Cancel(const std::string& run_id);
  // The best verified, trusted variants per task (limit per task).
  absl::StatusOr<std::vector<v1::Variant>> Best(const std::string& run_id, int limit);
  // Writes the export into request.out_dir on this machine, or (out_dir
  // empty) returns its files in the response and writes nothing here.
  absl::StatusOr<v1::ExportRunResponse> Export(const v1::ExportRunRequest& request);
  // Scores completions outside any run (CandidateScorer, at most
  // parallel_candidates at once); stores nothing. An error only for a bad
  // request or when `context` ends first.
  absl::StatusOr<v1::ScoreCompletionsResponse> Score(const v1::ScoreCompletionsRequest& request,
                                                     const RequestContext& context);

  // The hack database (docs/hacks.md): cases filtered by kind and task
  // (sources left out unless asked for), and one case by id.
  absl::StatusOr<v1::ListHackCasesResponse> HackCases(const v1::ListHackCasesRequest& request);
  absl::StatusOr<v1::HackCase> HackCase(const std::string& case_id);
  // An ended run's held rewards to the judge again (RunExecutor::Rejudge);
  // FAILED_PRECONDITION while it is queued or going, when its spec asks for
  // no judge or this orchestrator has none; ABORTED while another call
  // re-judges it.
  absl::StatusOr<v1::RejudgeRunResponse> Rejudge(const std::string& run_id, const RequestContext& context);
  // One pass over the ended runs that still hold rewards (Run.held > 0),
  // each asked about again (Rejudge; one that another call is re-judging
  // is skipped). Returns how many rewards were decided.
  absl::StatusOr<int> RejudgeEnded(const RequestContext& context);

  // Events after `after_sequence`, waiting up to `wait` for the first one.
  // Empty: none yet (the run may have ended: check its state).
  absl::StatusOr<std::vector<v1::RunEvent>> Events(const std::string& run_id, int64_t after_sequence,
                                                  absl::Duration wait);

 private:
  struct Active {
    std::unique_ptr<RequestContext> context;
    std::thread thread;
    bool done = false;
  };
  void Launch(const v1::Run& run) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void LaunchQueued() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Finished(const std::string& run_id);
  void Notify(const v1::RunEvent& event);
  // The thread behind options_.rejudge_every.
  void RejudgeEvery();

  Services services_;
  StoreInterface* store_;
  ClockInterface* clock_;
  OrchestratorOptions options_;
  std::atomic<bool> stopping_{false};
  absl::Mutex mu_;
  std::map<std::string, Active> active_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> queued_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int64_t> last_sequence_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> rejudging_ ABSL_GUARDED_BY(mu_);
  RequestContext rejudge_context_;  // cancelled by Stop
  std::thread rejudger_;
};

}  // namespace crl::orchestrator

#endif  // CRL_SERVICES_ORCHESTRATOR_ORCHESTRATOR_H_
