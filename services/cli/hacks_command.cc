// crl hacks: the hack database on a crl-orchestrator (docs/hacks.md).
//
//   crl hacks list [--kind K] [--task T] [--limit N] [--json]
//   crl hacks show CASE_ID [--json]
//   crl hacks export DIR [--kind K] [--task T]   one source file per case and
//                                                cases.jsonl, on this machine
//   crl hacks seed [--tasks DIR] [--backend host|cuda] [--match A,B]
//       the shipped hack candidates (tasks/kernelbench/hacks, the native
//       tasks' hack_* candidates), scored by the cluster and recorded as
//       known hacks
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "common/file.h"
#include "common/paths.h"
#include "lib/hacks/hack_case.h"
#include "lib/reward/names.h"
#include "lib/run/task_files.h"
#include "services/cli/commands.h"
#include "services/cli/local_cluster.h"
#include "services/orchestrator/grpc_orchestrator_client.h"

namespace crl::cli {
namespace {

namespace fs = std::filesystem;

std::string Line(const v1::HackCase& c) {
  std::vector<std::string> flags;
  AddFlagNamesOnce(c.flags(), &flags);
  return absl::StrCat(c.case_id(), "  ", c.task_name(), "  [", absl::StrJoin(c.kinds(), ","), "]  ",
                      VerdictShortName(c.verdict()), flags.empty() ? "" : " " + absl::StrJoin(flags, ","),
                      "  seen ", c.times_seen(), "x", c.judgement().decision().empty() ? "" : "  judged " +
                      c.judgement().decision(), "  ", c.origin());
}

// A seed item: a hack file, the task it answers, and what its author says.
struct SeedItem {
  std::string file;
  std::string task_path;
  std::string note;
  bool kernelbench = false;
};

// The shipped hack candidates of `backend` under `tasks`.
absl::StatusOr<std::vector<SeedItem>> SeedItems(const std::string& tasks, const std::string& backend) {
  std::vector<SeedItem> out;
  const std::string kb = tasks + "/kernelbench";
  std::error_code ec;
  if (fs::exists(kb + "/expect.yaml", ec)) {
    YAML::Node root;
    try {
      root = YAML::LoadFile(kb + "/expect.yaml");
    } catch (const std::exception& e) {
      return absl::InvalidArgumentError(absl::StrCat(kb, "/expect.yaml: ", e.what()));
    }
    for (const auto& c : root["candidates"]) {
      const std::string file = c["file"].as<std::string>("");
      if (!absl::StartsWith(file, "hacks/") || c["backend"].as<std::string>("") != backend) continue;
      out.push_back({kb + "/" + file, kb + "/" + c["task"].as<std::string>(""), c["why"].as<std::string>(""), true});
    }
  }
  const std::string ext = backend == "cuda" ? ".cu" : ".cc";
  if (fs::is_directory(tasks + "/native", ec)) {
    std::vector<fs::path> dirs;
    for (const auto& d : fs::directory_iterator(tasks + "/native", ec)) dirs.push_back(d.path());
    std::sort(dirs.begin(), dirs.end());
    for (const auto& d : dirs) {
      std::vector<fs::path> files;
      for (const auto& f : fs::directory_iterator(d / "candidates", ec)) files.push_back(f.path());
      std::sort(files.begin(), files.end());
      for (const auto& f : files) {
        const std::string name = f.filename().string();
        if (absl::StartsWith(name, "hack_") && f.extension() == ext) out.push_back({f.string(), d.string(), "", false});
      }
    }
  }
  if (out.empty()) return absl::NotFoundError(absl::StrCat("no ", backend, " hack candidates under ", tasks));
  return out;
}

int Seed(OrchestratorClientInterface* c, const OptionSet& flags, const std::string& tasks, const std::string& backend,
         const std::vector<std::string>& match, absl::Duration timeout) {
  auto items = SeedItems(tasks, backend);
  if (!items.ok()) return UsageError(flags, items.status());
  if (!match.empty()) {
    std::vector<SeedItem> kept;
    for (SeedItem& it : *items) {
      for (const auto& m : match) {
        if (absl::StrContains(it.file, m)) {
          kept.push_back(std::move(it));
          break;
        }
      }
    }
    if (kept.empty()) {
      return UsageError(flags, absl::InvalidArgumentError(absl::StrCat("match: no ", backend, " hack candidate's path contains ",
                                                                       absl::StrJoin(match, " or "))));
    }
    *items = std::move(kept);
  }
  v1::ScoreCompletionsRequest req;
  req.set_record_hacks(true);
  req.mutable_spec()->set_backend(backend == "cuda" ? v1::BACKEND_CUDA : v1::BACKEND_HOST);
  std::map<std::string, std::string> task_names;  // path -> name
  for (const SeedItem& it : *items) {
    auto text = ReadFileToString(it.file, "hack candidate");
    if (!text.ok()) return Fail(text.status());
    std::string& name = task_names[it.task_path];
    if (name.empty()) {
      auto task = run::TaskFor(it.task_path, /*inline_files=*/true);
      if (!task.ok()) return UsageError(flags, absl::InvalidArgumentError(absl::StrCat(it.task_path, ": ", task.status().message())));
      name = fs::path(it.task_path).stem().string();
      task->set_name(name);
      *req.mutable_spec()->add_tasks() = *std::move(task);
    }
    v1::ScoreItem* item = req.add_items();
    item->set_task_name(name);
    const char* lang = it.kernelbench ? "python" : backend == "cuda" ? "cuda" : "cpp";
    item->set_completion(absl::StrCat("```", lang, "\n", *text, "\n```\n"));
    item->set_origin(fs::relative(it.file, fs::path(tasks).parent_path()).string());
    item->set_known_hack(true);
    item->set_note(it.note);
  }
  RequestContext ctx(RealClock::Get(), absl::Now() + timeout);
  auto scored = c->ScoreCompletions(req, ctx);
  if (!scored.ok()) return Fail(scored.status());
  int infra = 0;
  for (int i = 0; i < scored->results_size(); ++i) {
    const v1::Variant& v = scored->results(i);
    infra += v.infra_failure() ? 1 : 0;
    std::vector<std::string> kinds = hacks::Kinds(v);
    std::printf("%-60s %s%s\n", req.items(i).origin().c_str(),
                v.infra_failure() ? "INFRA (not recorded)" : VerdictShortName(v.verdict()).c_str(),
                kinds.empty() ? "" : absl::StrCat("  [", absl::StrJoin(kinds, ","), "]").c_str());
  }
  std::printf("%d hack candidates scored and recorded (%d infrastructure failures, not recorded)\n",
              scored->results_size() - infra, infra);
  return infra > 0 ? 3 : 0;
}

}  // namespace

int HacksCommand(int argc, char** argv) {
  std::string address = "127.0.0.1:50050", cluster_dir, kind, task, tasks, backend = "host";
  bool json = false;
  int limit = 100;
  ClientOptions client;
  client.timeout = absl::Minutes(30);  // seed: one call scores every hack
  OrchestratorFromEnvironment(&address, &client);
  OptionSet flags("crl hacks",
                  "The hack database: list, show, export (to this machine), seed (score the shipped hacks and record "
                  "them).");
  flags.Add("orchestrator", &address, "HOST:PORT of the crl-orchestrator");
  flags.Add("cluster", &cluster_dir, "a local cluster's directory (crl up --data_dir): its orchestrator and token");
  flags.Add("kind", &kind, absl::StrCat("list/export: only this kind (", absl::StrJoin(hacks::KnownKinds(), ", "), ")"));
  flags.Add("task", &task, "list/export: only this task");
  flags.Add("limit", &limit, "list/export: most cases");
  flags.Add("json", &json, "list/show: machine-readable output");
  flags.Add("tasks", &tasks, "seed: the tasks folder (default: the shipped tasks/)");
  flags.Add("backend", &backend, "seed: host or cuda (which hack candidates, and where they run)");
  std::vector<std::string> match;
  flags.Add("match", &match, "seed: only candidates whose path contains one of these (comma-separated)");
  BindClientOptions(&flags, &client);
  std::vector<std::string> args;
  absl::Status parsed = flags.Parse(argc, argv, &args);
  const bool verb_ok = !args.empty() && ((args[0] == "list" && args.size() == 1) || (args[0] == "show" && args.size() == 2) ||
                                         (args[0] == "export" && args.size() == 2) || (args[0] == "seed" && args.size() == 1));
  if (!parsed.ok() || flags.help_requested() || !verb_ok) {
    return UsageError(flags, !parsed.ok() || flags.help_requested()
                                 ? parsed
                                 : absl::InvalidArgumentError("usage: crl hacks list|show CASE_ID|export DIR|seed"));
  }
  if (backend != "host" && backend != "cuda") {
    return UsageError(flags, absl::InvalidArgumentError(absl::StrCat("backend: '", backend, "' is not host or cuda")));
  }
  if (!cluster_dir.empty()) {
    if (absl::Status s = UseLocalClusterOrchestrator(cluster_dir, &address, &client); !s.ok()) return Fail(s);
  }
  const absl::Duration timeout = client.timeout;
  auto c = GrpcOrchestratorClient::Create(address, client);
  if (!c.ok()) return Fail(c.status());
  const std::string& verb = args[0];
  if (verb == "seed") {
    if (tasks.empty()) tasks = FindShippedDir("tasks");
    if (tasks.empty()) return UsageError(flags, absl::NotFoundError("tasks: the shipped tasks/ folder is not found"));
    return Seed(c->get(), flags, tasks, backend, match, timeout);
  }
  RequestContext ctx(RealClock::Get(), absl::Now() + absl::Minutes(2));
  auto failed = [&](const absl::Status& s) {
    return s.code() == absl::StatusCode::kInvalidArgument ? UsageError(flags, s) : Fail(s);
  };
  if (verb == "show") {
    auto one = (*c)->GetHackCase(args[1], ctx);
    if (!one.ok()) return failed(one.status());
    if (json) {
      std::printf("%s\n", ProtoJson(*one, true).c_str());
      return 0;
    }
    std::printf("%s\n", Line(*one).c_str());
    if (!one->judgement().decision().empty()) {
      std::printf("judge (%s): %s — %s\n", one->judgement().model().c_str(), one->judgement().decision().c_str(),
                  one->judgement().reasoning().c_str());
    }
    for (const auto& e : one->evidence()) std::printf("evidence: %s\n", e.c_str());
    std::printf("--- source\n%s\n", one->source().c_str());
    return 0;
  }
  v1::ListHackCasesRequest req;
  req.set_kind(kind);
  req.set_task_name(task);
  req.set_limit(limit);
  req.set_with_source(verb == "export" || json);
  auto list = (*c)->ListHackCases(req, ctx);
  if (!list.ok()) return failed(list.status());
  if (verb == "list") {
    if (json) {
      for (const auto& one : list->cases()) std::printf("%s\n", ProtoJson(one, false).c_str());
    } else {
      for (const auto& one : list->cases()) std::printf("%s\n", Line(one).c_str());
      std::printf("%d cases\n", list->cases_size());
    }
    return 0;
  }
  // export: one source file per case and every case as a JSON line.
  std::error_code ec;
  fs::create_directories(args[1], ec);
  if (ec) return Fail(absl::InternalError(absl::StrCat(args[1], ": ", ec.message())));
  std::ofstream index(fs::path(args[1]) / "cases.jsonl");
  for (const auto& one : list->cases()) {
    const bool python = absl::StrContains(one.source(), "import torch");
    std::ofstream(fs::path(args[1]) / absl::StrCat(one.case_id(), python ? ".py" : ".cc")) << one.source();
    index << ProtoJson(one, false) << "\n";
  }
  if (!index) return Fail(absl::InternalError(absl::StrCat(args[1], "/cases.jsonl: write failed")));
  std::printf("%d cases written to %s\n", list->cases_size(), args[1].c_str());
  return 0;
}

}  // namespace crl::cli
