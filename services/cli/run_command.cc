// crl run: runs on a crl-orchestrator (--orchestrator HOST:PORT).
//
//   crl run spec SPEC.yaml                 (the spec as the RunSpec it resolves to, JSON)
//   crl run submit SPEC.yaml [--key K] [--watch] [--json]
//   crl run watch RUN_ID [--after N] [--json]
//   crl run list [--state running] [--page_size N] [--json]
//   crl run show RUN_ID [--json]
//   crl run cancel RUN_ID [--json]
//   crl run rejudge RUN_ID [--json]        (an ended run's held rewards to the judge again)
//   crl run export RUN_ID --format jsonl|kernelbench|report --out DIR [--baseline RUN_ID] [--on_server]
//
// Exit codes: 0 done (a watched run succeeded), 1 a watched run failed or
// was cancelled, 2 bad usage or spec, 3 the orchestrator could not be reached.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/file.h"
#include "common/status.h"
#include "lib/run/run_spec.h"
#include "lib/run/task_files.h"
#include "services/cli/commands.h"
#include "services/cli/local_cluster.h"
#include "services/orchestrator/grpc_orchestrator_client.h"

namespace crl::cli {
namespace {

// An export's files, as the orchestrator sent them, under `dir` (made if
// missing). A path that is absolute or climbs out of `dir` is refused.
absl::Status WriteExportedFiles(const v1::ExportRunResponse& r, const std::string& dir) {
  namespace fs = std::filesystem;
  for (const v1::File& f : r.files()) {
    const fs::path rel = fs::path(f.path()).lexically_normal();
    if (rel.empty() || rel.is_absolute() || *rel.begin() == "..") {
      return absl::DataLossError(absl::StrCat("export: the orchestrator sent a file named '", f.path(), "'"));
    }
    const fs::path to = fs::path(dir) / rel;
    std::error_code ec;
    fs::create_directories(to.parent_path(), ec);
    if (ec) return absl::FailedPreconditionError(absl::StrCat("export: cannot create ", to.parent_path().string()));
    CRL_RETURN_IF_ERROR(WriteStringToFile(to.string(), f.content()));
  }
  return absl::OkStatus();
}

const char* StateName(v1::RunState s) {
  switch (s) {
    case v1::RUN_STATE_QUEUED: return "queued";
    case v1::RUN_STATE_RUNNING: return "running";
    case v1::RUN_STATE_SUCCEEDED: return "succeeded";
    case v1::RUN_STATE_FAILED: return "failed";
    case v1::RUN_STATE_CANCELLED: return "cancelled";
    default: return "unknown";
  }
}

void PrintRun(const v1::Run& r) {
  std::printf("%s  %s  %s\n", r.run_id().c_str(), StateName(r.state()), r.spec().name().c_str());
  std::printf("  stage %d round %d, rounds done %d; candidates %d (verified %d, rejected %d, infra %d, faster %d)\n",
              r.stage_index(), r.stage_round(), r.rounds_done(), r.candidates(), r.variants_correct(), r.rejected(),
              r.infra_failures(), r.faster());
  std::printf("  mean reward %.3f over %d, best trusted speedup %.3fx, policy %s%s%s\n",
              r.rewarded() ? r.reward_sum() / r.rewarded() : 0.0, r.rewarded(), r.best_speedup(),
              r.policy_version().c_str(), r.error().empty() ? "" : "\n  error: ", r.error().c_str());
  if (r.held() > 0) {
    std::printf("  %d reward(s) held for the judge%s\n", r.held(),
                run::RunEnded(r.state()) ? ": the orchestrator asks again periodically; crl run rejudge asks now"
                                         : ": asked again after each round");
  }
}

// Follows a run to its end, reconnecting from the last sequence seen.
int Watch(OrchestratorClientInterface* c, const std::string& run_id, int64_t after, bool json) {
  const bool tty = isatty(STDOUT_FILENO) && !json;
  v1::Run last;
  int failures = 0;
  for (;;) {
    v1::WatchRunRequest req;
    req.set_run_id(run_id);
    req.set_after_sequence(after);
    RequestContext ctx;
    absl::Status s = c->WatchRun(req, ctx, [&](const v1::RunEvent& e) {
      after = e.sequence();
      last = e.run();
      if (json) {
        std::printf("%s\n", ProtoJson(e, false).c_str());
      } else if (e.kind() == "variant") {
        const auto& v = e.variant();
        const std::string what = v.infra_failure() ? "infra failure (no reward)"
                                 : v.parse_error() ? "rejected by the parser"
                                                   : absl::StrCat(v1::Verdict_Name(v.verdict()), " ", v.speedup(), "x");
        std::printf("%s%-28s %-40s reward %.3f%s", tty ? "\r" : "", v.key().c_str(), what.c_str(), v.reward().reward(),
                    tty ? "\n" : "\n");
      } else {
        std::printf("[%s] %s (candidates %d, rounds %d)\n", e.kind().c_str(), e.message().c_str(),
                    e.run().candidates(), e.run().rounds_done());
      }
      std::fflush(stdout);
    });
    if (s.ok()) break;
    if (s.code() == absl::StatusCode::kNotFound || s.code() == absl::StatusCode::kInvalidArgument) return Fail(s);
    if (++failures > 30) return Fail(s);
    std::fprintf(stderr, "watch: %s; reconnecting from event %lld\n", s.ToString().c_str(),
                 static_cast<long long>(after));
    sleep(2);
  }
  auto run = c->GetRun(run_id, RequestContext());
  if (run.ok()) last = *run;
  if (!json) PrintRun(last);
  return last.state() == v1::RUN_STATE_SUCCEEDED ? 0 : 1;
}

}  // namespace

int RunCommand(int argc, char** argv) {
  std::string address = "127.0.0.1:50050", key, state, format = "jsonl", out, baseline;
  bool json = false, watch = false;
  int page_size = 50;
  int64_t after = 0;
  ClientOptions client;
  OrchestratorFromEnvironment(&address, &client);
  OptionSet flags("crl run", "Runs on a crl-orchestrator: submit, watch, list, show, cancel, rejudge, export.");
  flags.Add("orchestrator", &address, "HOST:PORT of the crl-orchestrator");
  std::string cluster_dir;
  flags.Add("cluster", &cluster_dir, "a local cluster's directory (crl up --data_dir): its orchestrator and token");
  flags.Add("key", &key, "submit: idempotency key (a retry with the same key returns the same run)");
  flags.Add("watch", &watch, "submit: then follow the run to its end");
  flags.Add("json", &json, "machine-readable output");
  flags.Add("state", &state, "list: only runs in this state");
  flags.Add("page_size", &page_size, "list: runs per page");
  flags.Add("after", &after, "watch: events after this sequence number");
  flags.Add("format", &format, "export: jsonl, kernelbench or report");
  flags.Add("baseline", &baseline, "export report: the untrained twin's run id, shown beside the run");
  flags.Add("out", &out, "export: directory to write into, on this machine (made if missing)");
  bool on_server = false;
  flags.Add("on_server", &on_server, "export: --out is a directory on the orchestrator's machine, which writes it");
  bool task_paths = false, inline_tasks = false;
  flags.Add("task_paths", &task_paths,
            "submit: send task paths, which the orchestrator and workers must be able to read, instead of the "
            "task files inline");
  flags.Add("inline_tasks", &inline_tasks, "spec: print the tasks as submit sends them (their files inline)");
  BindClientOptions(&flags, &client);
  std::vector<std::string> args;
  absl::Status parsed = flags.Parse(argc, argv, &args);
  if (!parsed.ok() || flags.help_requested() || args.empty()) {
    return UsageError(flags, !parsed.ok() || flags.help_requested()
                                 ? parsed
                                 : absl::InvalidArgumentError(
                                       "usage: crl run spec|submit|watch|list|show|cancel|rejudge|export ..."));
  }
  const std::string verb = args[0];
  if (!cluster_dir.empty()) {
    if (absl::Status s = UseLocalClusterOrchestrator(cluster_dir, &address, &client); !s.ok()) return Fail(s);
  }
  auto need = [&](size_t n) { return args.size() >= n; };
  if (verb == "spec" && need(2)) {
    // Offline: what a spec file resolves to (task paths, shipped examples).
    auto spec = run::LoadRunSpecFile(args[1]);
    if (!spec.ok()) return UsageError(flags, spec.status());
    if (inline_tasks) {
      if (absl::Status s = run::InlineTasks(&*spec); !s.ok()) return UsageError(flags, s);
    }
    std::printf("%s\n", ProtoJson(*spec, true).c_str());
    return 0;
  }
  // rejudge waits for the judge, up to its timeout for each held reward it
  // asks about: a default 30 s deadline would cut it short.
  if (verb == "rejudge") client.timeout = std::max(client.timeout, absl::Minutes(15));
  auto c = GrpcOrchestratorClient::Create(address, client);
  if (!c.ok()) return Fail(c.status());
  RequestContext ctx;
  auto report = [&](const absl::StatusOr<v1::Run>& r) {
    if (!r.ok()) return r.status().code() == absl::StatusCode::kInvalidArgument ? UsageError(flags, r.status())
                                                                                 : Fail(r.status());
    if (json) {
      std::fputs(ProtoJson(*r, true).c_str(), stdout);
      std::fputs("\n", stdout);
    } else {
      PrintRun(*r);
    }
    return 0;
  };
  if (verb == "submit" && need(2)) {
    auto spec = run::LoadRunSpecFile(args[1]);
    if (!spec.ok()) return UsageError(flags, spec.status());
    // The tasks travel with the run: the orchestrator need not see this
    // machine's files.
    if (!task_paths) {
      if (absl::Status s = run::InlineTasks(&*spec); !s.ok()) return UsageError(flags, s);
    }
    v1::SubmitRunRequest req;
    *req.mutable_spec() = *spec;
    req.set_idempotency_key(key);
    auto r = (*c)->SubmitRun(req, ctx);
    if (int rc = report(r); rc != 0 || !watch) return rc;
    return Watch(c->get(), r->run_id(), 0, json);
  }
  if (verb == "watch" && need(2)) return Watch(c->get(), args[1], after, json);
  if (verb == "show" && need(2)) return report((*c)->GetRun(args[1], ctx));
  if (verb == "cancel" && need(2)) return report((*c)->CancelRun(args[1], ctx));
  if (verb == "rejudge" && need(2)) {
    auto r = (*c)->RejudgeRun(args[1], ctx);
    if (!r.ok()) return report(r.status());
    if (json) {
      std::printf("%s\n", ProtoJson(*r, true).c_str());
      return 0;
    }
    PrintRun(r->run());
    std::printf("judge: %d held reward(s) decided now, %d still held%s\n", r->decided(), r->held(),
                r->held() > 0 ? " (the judge is down or undecided: ask again later)" : "");
    return 0;
  }
  if (verb == "list") {
    v1::ListRunsRequest req;
    req.set_page_size(page_size);
    if (!state.empty()) {
      v1::RunState s;
      if (!v1::RunState_Parse("RUN_STATE_" + absl::AsciiStrToUpper(state), &s)) {
        return UsageError(flags, absl::InvalidArgumentError("state: queued, running, succeeded, failed or cancelled"));
      }
      req.set_state(s);
    }
    auto r = (*c)->ListRuns(req, ctx);
    if (!r.ok()) return Fail(r.status());
    if (json) {
      std::fputs(ProtoJson(*r, true).c_str(), stdout);
    } else {
      for (const auto& run : r->runs()) {
        std::printf("%-36s %-10s candidates %5d best %.3fx  %s\n", run.run_id().c_str(), StateName(run.state()),
                    run.candidates(), run.best_speedup(), run.spec().name().c_str());
      }
    }
    return 0;
  }
  if (verb == "export" && need(2)) {
    v1::ExportRunRequest req;
    req.set_run_id(args[1]);
    req.set_format(format);
    if (out.empty()) return UsageError(flags, absl::InvalidArgumentError("export: --out DIR is required"));
    // Written here by default (the orchestrator sends the files back); with
    // --on_server the orchestrator writes (a relative directory is resolved
    // here, where the person typing it is).
    if (on_server) req.set_out_dir(std::filesystem::absolute(out).string());
    req.set_baseline_run_id(baseline);
    auto r = (*c)->ExportRun(req, ctx);
    if (!r.ok()) return r.status().code() == absl::StatusCode::kInvalidArgument ? UsageError(flags, r.status())
                                                                                 : Fail(r.status());
    if (!on_server) {
      if (absl::Status s = WriteExportedFiles(*r, out); !s.ok()) return Fail(s);
    }
    std::printf("%d files written to %s\n", on_server ? r->files_written() : r->files_size(),
                on_server ? r->out_dir().c_str() : out.c_str());
    return 0;
  }
  return UsageError(flags, absl::InvalidArgumentError(absl::StrCat("run ", verb, ": unknown verb or missing RUN_ID")));
}

}  // namespace crl::cli
