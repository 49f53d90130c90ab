// crl reward: crl's rewards for another RL engine's trainer, through a
// crl-orchestrator's ScoreCompletions (parse → evaluate → time → reward,
// exactly as a run scores its candidates; nothing is stored).
//
//   crl reward score --spec SPEC.yaml --task NAME [--completion FILE] [--json]
//       one completion (FILE, or stdin) → verdict, speedup, reward
//   crl reward serve --spec SPEC.yaml --listen HOST:PORT
//       the OpenRLHF remote reward endpoint: POST /get_reward (reward_http.h)
//
// The spec is a run spec file (tasks, backend, reward, timing budget; its
// stages are ignored). Both take --orchestrator HOST:PORT or --cluster DIR.
// Exit codes: 0 scored, 2 bad usage or spec, 3 the orchestrator could not
// be reached or the infrastructure failed (no reward).
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include <httplib.h>

#include "absl/strings/str_cat.h"
#include "common/file.h"
#include "common/http_listen.h"
#include "common/grpc_status.h"
#include "lib/run/run_spec.h"
#include "lib/run/task_files.h"
#include "services/cli/commands.h"
#include "services/cli/local_cluster.h"
#include "services/cli/reward_http.h"
#include "services/orchestrator/grpc_orchestrator_client.h"

namespace crl::cli {
namespace {

httplib::Server* g_server = nullptr;

void StopServer(int) {
  if (g_server) g_server->stop();
}

int HttpStatus(const absl::Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kInvalidArgument: return 400;
    case absl::StatusCode::kUnauthenticated: return 401;
    case absl::StatusCode::kResourceExhausted: return 429;
    case absl::StatusCode::kDeadlineExceeded: return 504;
    case absl::StatusCode::kUnavailable: return 503;
    default: return 500;
  }
}

int Serve(OrchestratorClientInterface* c, const v1::RunSpec& spec, const std::string& listen, absl::Duration timeout) {
  httplib::Server server;
  server.set_payload_max_length(64 << 20);
  auto reply = [](httplib::Response& res, int status, const nlohmann::json& body) {
    res.status = status;
    res.set_content(body.dump(), "application/json");
  };
  server.Post("/get_reward", [&](const httplib::Request& req, httplib::Response& res) {
    const nlohmann::json body = nlohmann::json::parse(req.body, nullptr, false);
    if (body.is_discarded()) return reply(res, 400, {{"error", "body: not JSON"}});
    auto request = ParseRewardRequest(body, spec);
    if (!request.ok()) return reply(res, 400, {{"error", std::string(request.status().message())}});
    RequestContext ctx(RealClock::Get(), absl::Now() + timeout);
    auto scored = c->ScoreCompletions(*request, ctx);
    if (!scored.ok()) {
      return reply(res, HttpStatus(scored.status()), {{"error", absl::StrCat("scoring: ", scored.status().ToString())}});
    }
    auto out = RewardResponse(*scored);
    if (!out.ok()) {
      res.set_header("Retry-After", "10");
      return reply(res, 503, {{"error", std::string(out.status().message())}});
    }
    reply(res, 200, *out);
  });
  server.Get("/health", [&](const httplib::Request&, httplib::Response& res) { reply(res, 200, {{"ok", true}}); });
  absl::StatusOr<int> port = BindHttp(&server, listen, "listen");
  if (!port.ok()) {
    std::fprintf(stderr, "crl reward serve: %s\n", std::string(port.status().message()).c_str());
    return port.status().code() == absl::StatusCode::kInvalidArgument ? 2 : 3;
  }
  g_server = &server;
  std::signal(SIGTERM, StopServer);
  std::signal(SIGINT, StopServer);
  std::printf("crl reward serve: listening http=%s:%d (POST /get_reward)\n",
              listen.substr(0, listen.rfind(':')).c_str(), *port);
  std::fflush(stdout);
  server.listen_after_bind();
  g_server = nullptr;
  return 0;
}

}  // namespace

int RewardCommand(int argc, char** argv) {
  std::string address = "127.0.0.1:50050", cluster_dir, spec_file, task, completion_file, listen = "127.0.0.1:5000";
  bool json = false;
  ClientOptions client;
  client.timeout = absl::Minutes(30);  // --timeout: one call's (one batch's) scoring
  OrchestratorFromEnvironment(&address, &client);
  OptionSet flags("crl reward", "crl's rewards for another RL engine: score completions, or serve OpenRLHF's endpoint.");
  flags.Add("orchestrator", &address, "HOST:PORT of the crl-orchestrator");
  flags.Add("cluster", &cluster_dir, "a local cluster's directory (crl up --data_dir): its orchestrator and token");
  flags.Add("spec", &spec_file, "run spec file: the tasks, backend, reward and timing budget (required)");
  flags.Add("task", &task, "score: the task the completion answers");
  flags.Add("completion", &completion_file, "score: a file with the completion (default: stdin)");
  flags.Add("json", &json, "score: machine-readable output");
  flags.Add("listen", &listen, "serve: HOST:PORT for HTTP (port 0: any)");
  BindClientOptions(&flags, &client);
  std::vector<std::string> args;
  absl::Status parsed = flags.Parse(argc, argv, &args);
  if (!parsed.ok() || flags.help_requested() || args.size() != 1 || (args[0] != "score" && args[0] != "serve")) {
    return UsageError(flags, !parsed.ok() || flags.help_requested()
                                 ? parsed
                                 : absl::InvalidArgumentError("usage: crl reward score|serve --spec SPEC ..."));
  }
  if (spec_file.empty()) return UsageError(flags, absl::InvalidArgumentError("spec: a run spec file is required"));
  auto spec = run::LoadRunSpecFile(spec_file);
  if (!spec.ok()) return UsageError(flags, spec.status());
  // The tasks go with every request, as `crl run submit` sends them.
  if (absl::Status s = run::InlineTasks(&*spec); !s.ok()) return UsageError(flags, s);
  if (!cluster_dir.empty()) {
    if (absl::Status s = UseLocalClusterOrchestrator(cluster_dir, &address, &client); !s.ok()) return Fail(s);
  }
  const absl::Duration timeout = client.timeout;
  auto c = GrpcOrchestratorClient::Create(address, client);
  if (!c.ok()) return Fail(c.status());
  if (args[0] == "serve") return Serve(c->get(), *spec, listen, timeout);

  if (task.empty()) return UsageError(flags, absl::InvalidArgumentError("task: which task the completion answers"));
  std::string completion;
  if (completion_file.empty()) {
    completion.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  } else {
    auto text = ReadFileToString(completion_file, "completion");
    if (!text.ok()) return UsageError(flags, text.status());
    completion = *std::move(text);
  }
  v1::ScoreCompletionsRequest req;
  *req.mutable_spec() = *spec;
  v1::ScoreItem* item = req.add_items();
  item->set_task_name(task);
  item->set_completion(completion);
  RequestContext ctx(RealClock::Get(), absl::Now() + timeout);
  auto scored = (*c)->ScoreCompletions(req, ctx);
  if (!scored.ok()) {
    return scored.status().code() == absl::StatusCode::kInvalidArgument ? UsageError(flags, scored.status())
                                                                         : Fail(scored.status());
  }
  const v1::Variant& v = scored->results(0);
  if (json) {
    std::printf("%s\n", ProtoJson(v, false).c_str());
  } else if (v.infra_failure()) {
    std::printf("infrastructure failure (no reward): %s\n", v.infra_detail().c_str());
  } else {
    std::printf("%s  speedup %.3fx  reward %s %.3f  %s\n",
                v.parse_error() != v1::PARSE_ERROR_UNSPECIFIED ? v1::ParseError_Name(v.parse_error()).c_str()
                                                               : v1::Verdict_Name(v.verdict()).c_str(),
                v.speedup(), v1::RewardStatus_Name(v.reward().status()).c_str(), v.reward().reward(),
                v.reward().explanation().c_str());
  }
  return v.infra_failure() ? 3 : 0;
}

}  // namespace crl::cli
