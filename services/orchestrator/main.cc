// crl-orchestrator: runs of prompt → sample → parse → evaluate → time →
// reward → train over the other services, stored in SQLite under
// --data_dir (or PostgreSQL, --store postgresql://...) so that a restart
// resumes every run where it was.
//
//   crl-orchestrator --data_dir /var/lib/crl --prompt 127.0.0.1:50053 --sampler 127.0.0.1:50054
//     --workers 10.0.0.5:50051,10.0.0.6:50051 --timing 127.0.0.1:50052 --trainer 127.0.0.1:50055
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <thread>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/strings/ascii.h"
#include "common/file.h"
#include "common/http_client.h"
#include "common/paths.h"
#include "common/resolve.h"
#include "common/service_main.h"
#include "common/status.h"
#include "services/orchestrator/judge.h"
#include "services/orchestrator/orchestrator.h"
#include "services/orchestrator/orchestrator_service.h"
#include "services/orchestrator/open_store.h"
#include "services/prompt/grpc_prompt_client.h"
#include "services/sampler/grpc_sampler_client.h"
#include "services/timing/grpc_timing_client.h"
#include "services/trainer/grpc_trainer_client.h"
#include "services/worker/grpc_worker_client.h"

namespace {

struct Options {
  std::string data_dir = "crl-data";
  std::string store;
  std::string content_dir;
  std::string prompt, sampler, timing, trainer;
  std::vector<std::string> workers;
  int max_in_flight_per_lane = 4;
  int max_parallel_runs = 4;
  int parallel_candidates = 8;
  int parallel_groups = 4;
  bool train_after_scoring = false;
  // The judge on suspicious rewards (docs/hacks.md).
  std::string judge_url, judge_model, judge_api_key_file, judge_template;
  double judge_timeout_seconds = 120;
  double rejudge_every_seconds = 600;
  crl::ClientOptions upstream;
};

}  // namespace

int main(int argc, char** argv) {
  crl::ServiceMain service_main({"crl-orchestrator", "crl.v1.OrchestratorService",
                                 "Contrastive-RL runs over the prompt, sampler, worker, timing and trainer services.",
                                 "127.0.0.1:50050", {"orchestrator", 8, 256}});
  Options o;
  o.upstream.timeout = absl::Minutes(15);
  crl::OptionSet* f = service_main.flags();
  f->Add("data_dir", &o.data_dir, "where the SQLite store (orchestrator.db) and the content directory live");
  f->Add("content_dir", &o.content_dir,
         "where code, completions, prompts and logs are kept, content-addressed (empty: <data_dir>/content; with "
         "PostgreSQL, a volume of the orchestrator's own)");
  f->Add("store", &o.store,
         "empty: SQLite in --data_dir; sqlite:PATH; or postgresql://USER@HOST:PORT/DB (password from "
         "PGPASSWORD or a libpq passfile, never the command line)");
  f->Add("prompt", &o.prompt, "crl-prompt HOST:PORT (required)");
  f->Add("sampler", &o.sampler, "crl-sampler HOST:PORT (required)");
  f->Add("workers", &o.workers,
         "crl-workers: HOST:PORT list, or dns:///NAME:PORT for every address of a headless Service, re-resolved "
         "every 30 s (empty: the workers crl-timing measures on, as it lists them, re-read every 30 s: worker "
         "addresses are then configured once, in crl-timing)");
  f->Add("timing", &o.timing, "crl-timing HOST:PORT (required)");
  f->Add("trainer", &o.trainer, "crl-trainer HOST:PORT (empty: only sample-only stages run)");
  f->Add("max_in_flight_per_lane", &o.max_in_flight_per_lane,
         "candidates at once per lane of a worker (verified there, then timed there; the lanes "
         "as the worker reports them)");
  f->Add("max_parallel_runs", &o.max_parallel_runs, "runs executed at once (the rest wait, QUEUED)");
  f->Add("parallel_candidates", &o.parallel_candidates, "completions of a group scored at once");
  f->Add("parallel_groups", &o.parallel_groups, "groups of a round (one per task) sampled and scored at once");
  f->Add("train_after_scoring", &o.train_after_scoring,
         "send a training round's groups to the trainer only once the whole round is scored, so training never "
         "runs beside a measurement (where the trainer shares CPUs with host timing: the local cluster)");
  crl::BindClientOptions(f, &o.upstream, "upstream", "the services above");
  f->Add("judge_url", &o.judge_url,
         "OpenAI-compatible endpoint of the judge on suspicious rewards (http://HOST:PORT/v1; empty: no judge, and "
         "a spec with `judge:` is refused)");
  f->Add("judge_model", &o.judge_model, "the judge's model name at that endpoint");
  f->Add("judge_api_key_file", &o.judge_api_key_file, "file holding the endpoint's API key (empty: none)");
  f->Add("judge_template", &o.judge_template, "the judge's prompt template (empty: the shipped prompts/judge/judge.tmpl)");
  f->Add("judge_timeout_seconds", &o.judge_timeout_seconds, "a judge call's limit; past it the reward stays held");
  f->Add("rejudge_every_seconds", &o.rejudge_every_seconds,
         "with a judge: how often ended runs' held rewards are asked about again (0: only crl run rejudge)");

  std::unique_ptr<crl::orchestrator::StoreInterface> store;
  std::unique_ptr<crl::GrpcPromptClient> prompt;
  std::unique_ptr<crl::GrpcSamplerClient> sampler;
  std::unique_ptr<crl::GrpcTimingClient> timing;
  std::unique_ptr<crl::GrpcTrainerClient> trainer;
  std::map<std::string, std::unique_ptr<crl::GrpcWorkerClient>> workers;  // by address, kept
  // The workers now: a client per address, made once (outlives the setup: the
  // resolver thread calls it).
  std::function<absl::StatusOr<std::vector<crl::orchestrator::PooledWorker>>()> current;
  std::thread resolver;
  absl::Notification stop_resolving;
  std::unique_ptr<crl::orchestrator::WorkerPool> pool;
  std::unique_ptr<crl::orchestrator::OrchestratorMetrics> metrics;
  std::unique_ptr<crl::HttpClientInterface> http;
  std::unique_ptr<crl::orchestrator::JudgeInterface> judge;
  std::unique_ptr<crl::orchestrator::Orchestrator> orchestrator;
  std::unique_ptr<crl::OrchestratorServiceImpl> service;
  // The workers' addresses: --workers, or without it crl-timing's list
  // (`wait`: how long it may take to answer; it may still be starting).
  // Outlives the setup: the resolver thread calls it.
  auto listed = [&](absl::Duration wait) -> absl::StatusOr<std::vector<std::string>> {
    if (!o.workers.empty()) return crl::ResolveAddresses(o.workers);
    const absl::Time give_up = absl::Now() + wait;
    auto addresses = timing->ListWorkers(crl::RequestContext(crl::RealClock::Get(), give_up));
    // Not up yet (pods start in any order): ask again until the wait ends.
    while (absl::IsUnavailable(addresses.status()) && absl::Now() + absl::Seconds(1) < give_up) {
      absl::SleepFor(absl::Seconds(1));
      addresses = timing->ListWorkers(crl::RequestContext(crl::RealClock::Get(), give_up));
    }
    if (!addresses.ok()) {
      return crl::Annotate(addresses.status(), absl::StrCat("workers: none given, and crl-timing at ", o.timing,
                                                            " did not list its own"));
    }
    if (addresses->empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("workers: none given, and crl-timing at ", o.timing, " lists none"));
    }
    return addresses;
  };
  absl::Duration list_wait = absl::Minutes(1);  // at start-up; 10 s once serving
  return service_main.Run(argc, argv, [&](crl::ServiceSetup& setup) -> absl::Status {
    for (const auto& [flag, value] : {std::pair<const char*, const std::string*>{"prompt", &o.prompt},
                                      {"sampler", &o.sampler}, {"timing", &o.timing}}) {
      if (value->empty()) return absl::InvalidArgumentError(absl::StrCat(flag, ": HOST:PORT is required"));
    }
    CRL_ASSIGN_OR_RETURN(store, crl::orchestrator::OpenStore(o.store, o.data_dir, o.content_dir));
    CRL_ASSIGN_OR_RETURN(prompt, crl::GrpcPromptClient::Create(o.prompt, o.upstream));
    CRL_ASSIGN_OR_RETURN(sampler, crl::GrpcSamplerClient::Create(o.sampler, o.upstream));
    CRL_ASSIGN_OR_RETURN(timing, crl::GrpcTimingClient::Create(o.timing, o.upstream));
    if (!o.trainer.empty()) {
      CRL_ASSIGN_OR_RETURN(trainer, crl::GrpcTrainerClient::Create(o.trainer, o.upstream));
    }
    current = [&]() -> absl::StatusOr<std::vector<crl::orchestrator::PooledWorker>> {
      CRL_ASSIGN_OR_RETURN(std::vector<std::string> addresses, listed(list_wait));
      std::vector<crl::orchestrator::PooledWorker> pooled;
      for (const auto& a : addresses) {
        auto& c = workers[a];
        if (!c) {
          CRL_ASSIGN_OR_RETURN(c, crl::GrpcWorkerClient::Create(a, o.upstream));
        }
        pooled.push_back({a, c.get()});
      }
      return pooled;
    };
    CRL_ASSIGN_OR_RETURN(std::vector<crl::orchestrator::PooledWorker> pooled, current());
    pool = std::make_unique<crl::orchestrator::WorkerPool>(pooled, o.max_in_flight_per_lane, crl::RealClock::Get());
    list_wait = absl::Seconds(10);
    if (o.workers.empty() || crl::HasDnsEntries(o.workers)) {
      // Pods come and go behind a headless Service (ours, or crl-timing's):
      // follow them.
      resolver = std::thread([&] {
        while (!stop_resolving.WaitForNotificationWithTimeout(absl::Seconds(30))) {
          auto now = current();
          if (now.ok()) pool->SetWorkers(*now);
        }
      });
    }
    metrics = std::make_unique<crl::orchestrator::OrchestratorMetrics>(setup.registry());
    if (!o.judge_url.empty()) {
      crl::orchestrator::OpenAiJudgeOptions jo;
      jo.url = o.judge_url;
      jo.model = o.judge_model;
      jo.timeout = absl::Seconds(o.judge_timeout_seconds);
      if (!o.judge_api_key_file.empty()) {
        CRL_ASSIGN_OR_RETURN(std::string key, crl::ReadFileToString(o.judge_api_key_file, "judge_api_key_file"));
        jo.api_key = std::string(absl::StripAsciiWhitespace(key));
      }
      std::string tmpl = o.judge_template;
      if (tmpl.empty()) {
        const std::string prompts = crl::FindShippedDir("prompts");
        if (prompts.empty()) return absl::NotFoundError("judge_template: the shipped prompts/ folder is not found");
        tmpl = prompts + "/judge/judge.tmpl";
      }
      http = crl::NewCurlHttpClient();
      CRL_ASSIGN_OR_RETURN(judge, crl::orchestrator::OpenAiJudge::Create(http.get(), jo, tmpl));
    }
    crl::orchestrator::Services services{prompt.get(), sampler.get(), pool.get(), timing.get(), trainer.get(),
                                         metrics.get(), judge.get()};
    crl::orchestrator::OrchestratorOptions oo;
    oo.max_parallel_runs = o.max_parallel_runs;
    oo.rejudge_every = absl::Seconds(std::max(0.0, o.rejudge_every_seconds));
    oo.executor.parallel_candidates = o.parallel_candidates;
    oo.executor.parallel_groups = o.parallel_groups;
    oo.executor.train_after_scoring = o.train_after_scoring;
    orchestrator = std::make_unique<crl::orchestrator::Orchestrator>(services, store.get(), crl::RealClock::Get(), oo);
    CRL_RETURN_IF_ERROR(orchestrator->Start());
    service = std::make_unique<crl::OrchestratorServiceImpl>(orchestrator.get(), setup.call_env());
    setup.AddService(service.get());
    setup.SetDrain([&] {
      orchestrator->Stop();
      stop_resolving.Notify();
      if (resolver.joinable()) resolver.join();
    });
    return absl::OkStatus();
  });
}
