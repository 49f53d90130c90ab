// crl-orchestrator with every service as a real process: crl-prompt, a
// crl-sampler in front of a scripted OpenAI-compatible model (it answers with
// the native suite's shipped candidates: fast, slow, wrong, and prose with no
// code), a host crl-worker, crl-timing and crl-trainer. The orchestrator is
// killed with SIGKILL in the middle of the run and started again on the same
// store: the run resumes and completes, every candidate is scored exactly
// once, the watch stream continues from its sequence number without a gap,
// and the trainer received the run's groups.
#include <catch2/catch.hpp>

#include <filesystem>
#include <httplib.h>
#include <signal.h>

#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "common/file.h"
#include "lib/reward/names.h"
#include "services/orchestrator/grpc_orchestrator_client.h"
#include "services/trainer/grpc_trainer_client.h"
#include "tests/support/policy_fixture.h"
#include "tests/support/postgres_server.h"
#include "tests/support/service_process.h"

namespace crl::testing {
namespace {

using nlohmann::json;
const std::string kBin = CRL_BIN_DIR;
const std::string kSource = CRL_SOURCE_DIR;

// A "model" that answers chat completions with shipped candidates of the
// task its prompt names, in a fixed rotation.
class ScriptedModel {
 public:
  ScriptedModel() {
    for (const std::string task : {"row_sum", "gelu_affine"}) {
      const std::string dir = kSource + "/tasks/native/" + task + "/candidates/";
      for (const std::string file : {"fast_correct.cc", "slow_correct.cc", "wrong_drop_tail.cc",
                                     "wrong_bias_axis.cc"}) {
        auto code = ReadFileToString(dir + file, "candidate");
        if (code.ok()) answers_[task].push_back(Completion(*code));
      }
      answers_[task].push_back("I would fuse the loops, but I will not write the code.");
    }
    server_.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
      const json body = json::parse(req.body, nullptr, false);
      const std::string task = req.body.find("row_sum") != std::string::npos ? "row_sum" : "gelu_affine";
      json choices = json::array();
      std::lock_guard<std::mutex> lock(mu_);
      for (int i = 0; i < body.value("n", 1); ++i) {
        const auto& list = answers_[task];
        choices.push_back({{"index", i},
                           {"message", {{"role", "assistant"}, {"content", list[next_[task]++ % list.size()]}}},
                           {"finish_reason", "stop"}});
      }
      res.set_content(json({{"model", "scripted"}, {"choices", choices}}).dump(), "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~ScriptedModel() {
    server_.stop();
    thread_.join();
  }
  std::string base() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }

 private:
  static std::string Completion(const std::string& code) {
    return "### Performance analysis\nOne pass over each row.\n\n### Algorithm design\nAccumulate in a register.\n\n"
           "### Code\n```cpp\n" + code + "\n```\n";
  }
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::map<std::string, std::vector<std::string>> answers_;
  std::map<std::string, size_t> next_;
};

}  // namespace

TEST_CASE("a run survives kill -9 of the orchestrator and a database crash, and completes with every candidate once",
          "[integration][orchestrator]") {
  TempDir dir;
  const std::string model = MakePolicy(dir);
  ScriptedModel scripted;
  ServiceProcess worker(kBin + "/crl-worker", {"--listen=127.0.0.1:0", "--metrics_listen=127.0.0.1:0", "--gpus=",
                                               "--cache_dir=" + dir.path() + "/cache", "--work_dir=" + dir.path() + "/w",
                                               "--task_root=" + kSource + "/tasks/native", "--drain_delay=0s",
                                               "--log_level=warning"});
  REQUIRE(worker.started());
  ServiceProcess timing(kBin + "/crl-timing", {"--listen=127.0.0.1:0", "--metrics_listen=127.0.0.1:0",
                                               "--worker=" + worker.grpc_address(), "--budget_seconds=1",
                                               "--min_pairs=5", "--max_pairs=15", "--drain_delay=0s",
                                               "--log_level=warning"});
  REQUIRE(timing.started());
  ServiceProcess prompt(kBin + "/crl-prompt", {"--listen=127.0.0.1:0", "--metrics_listen=127.0.0.1:0",
                                               "--drain_delay=0s", "--log_level=warning"});
  REQUIRE(prompt.started());
  ServiceProcess trainer(kBin + "/crl-trainer", {"--listen=127.0.0.1:0", "--metrics_listen=127.0.0.1:0",
                                                 "--model=" + model, "--out_dir=" + dir.path() + "/train",
                                                 "--groups_per_step=1", "--examples_per_step=1", "--max_seq_len=16384",
                                                 "--micro_batch_tokens=8192",
                                                 "--drain_delay=0s", "--log_level=warning"});
  REQUIRE(trainer.started());
  ServiceProcess sampler(kBin + "/crl-sampler", {"--listen=127.0.0.1:0", "--metrics_listen=127.0.0.1:0",
                                                 "--endpoints=" + scripted.base(), "--endpoint_model=scripted",
                                                 "--endpoint_tokenizer=" + model, "--endpoint_extensions=false",
                                                 "--drain_delay=0s", "--log_level=warning"});
  REQUIRE(sampler.started());
  // The store is a real PostgreSQL server (the cluster's choice; SQLite
  // goes through the same drill in the quickstart's e2e test).
  auto pg = PostgresServer::Start();
  REQUIRE(pg.ok());
  const std::vector<std::string> orchestrator_args = {
      "--listen=127.0.0.1:0", "--metrics_listen=127.0.0.1:0", "--store=" + (*pg)->url(),
      "--data_dir=" + dir.path() + "/orchestrator",
      "--prompt=" + prompt.grpc_address(), "--sampler=" + sampler.grpc_address(),
      // No --workers: the orchestrator evaluates on the workers crl-timing
      // lists (worker addresses configured once), after each restart too.
      "--timing=" + timing.grpc_address(),
      "--trainer=" + trainer.grpc_address(), "--parallel_candidates=2", "--drain_delay=0s", "--log_level=warning"};
  auto orchestrator = std::make_unique<ServiceProcess>(kBin + "/crl-orchestrator", orchestrator_args);
  REQUIRE(orchestrator->started());

  // A researcher's folder: the spec and its tasks' files, nothing the
  // cluster can read. The spec names them relative to itself; the CLI sends
  // them inline.
  const std::string mine = dir.path() + "/researcher";
  for (const std::string task : {"row_sum", "gelu_affine"}) {
    std::filesystem::create_directories(mine + "/tasks/" + task);
    for (const auto& e : std::filesystem::directory_iterator(kSource + "/tasks/native/" + task)) {
      if (e.is_regular_file()) std::filesystem::copy_file(e.path(), mine + "/tasks/" + task + "/" + e.path().filename().string());
    }
  }
  REQUIRE(WriteStringToFile(mine + "/spec.yaml",
                            "name: crash-drill\n"
                            "tasks: [tasks/row_sum, tasks/gelu_affine]\n"
                            "stages: [{kind: keep-successes, rounds: 1}, {kind: contrastive-rl, rounds: 1}]\n"
                            "group_size: 5\ntiming_budget_seconds: 1\nseed: 3\n")
              .ok());
  // Submitted through the CLI, as a researcher would: the address by flag,
  // or (the resubmission below) from the environment.
  auto submit = [&](bool from_env) {
    const std::string where = from_env ? "CRL_ORCHESTRATOR=" + orchestrator->grpc_address() + " "
                                       : "";
    return "cd / && " + where + kBin + "/crl run submit " + mine + "/spec.yaml --key drill --json" +
           (from_env ? "" : " --orchestrator " + orchestrator->grpc_address()) + " > " + dir.path() +
           "/submitted.json";
  };
  REQUIRE(std::system(submit(false).c_str()) == 0);
  auto submitted = ReadFileToString(dir.path() + "/submitted.json", "out");
  REQUIRE(submitted.ok());
  const std::string run_id = json::parse(*submitted)["run_id"].get<std::string>();
  const json first_task = json::parse(*submitted)["spec"]["tasks"][0];
  CHECK(first_task.value("name", "") == "row_sum");
  CHECK(first_task.value("path", "").empty());
  CHECK(first_task["files"].size() >= 2);  // task.yaml and the reference

  // Watch until the first scored candidate, then kill -9 the orchestrator.
  int64_t last_seq = 0;
  {
    auto client = GrpcOrchestratorClient::Create(orchestrator->grpc_address(), ClientOptions());
    REQUIRE(client.ok());
    RequestContext ctx;
    v1::WatchRunRequest w;
    w.set_run_id(run_id);
    std::thread watcher([&] {
      (void)(*client)->WatchRun(w, ctx, [&](const v1::RunEvent& e) {
        last_seq = e.sequence();
        if (e.kind() == "variant") ctx.Cancel();
      });
    });
    watcher.join();
  }
  REQUIRE(last_seq > 0);
  orchestrator->Signal(SIGKILL);
  orchestrator->Wait(10);
  orchestrator = std::make_unique<ServiceProcess>(kBin + "/crl-orchestrator", orchestrator_args);
  REQUIRE(orchestrator->started());

  // A resubmission with the same key is the same run, not a second one.
  REQUIRE(std::system(submit(true).c_str()) == 0);
  auto again = ReadFileToString(dir.path() + "/submitted.json", "out");
  CHECK(json::parse(*again)["run_id"] == run_id);
  // A flag wins over the environment.
  CHECK(std::system(("CRL_ORCHESTRATOR=127.0.0.1:1 " + kBin + "/crl run show " + run_id + " --orchestrator " +
                     orchestrator->grpc_address() + " > /dev/null")
                        .c_str()) == 0);

  // The watcher reconnects from its sequence number and follows to the end.
  auto client = GrpcOrchestratorClient::Create(orchestrator->grpc_address(), ClientOptions());
  REQUIRE(client.ok());
  v1::WatchRunRequest w;
  w.set_run_id(run_id);
  w.set_after_sequence(last_seq);
  std::vector<v1::RunEvent> events;
  RequestContext ctx(RealClock::Get(), absl::Now() + absl::Minutes(10));
  // A few events on, the database crashes and comes back 3 s later: the
  // store reconnects, the run and the watch go on.
  std::thread db_crash;
  absl::Duration restart_took;
  const absl::Status watched = (*client)->WatchRun(w, ctx, [&](const v1::RunEvent& e) {
    events.push_back(e);
    if (events.size() == 3) {
      db_crash = std::thread([&] {
        CHECK((*pg)->Kill().ok());
        RealClock::Get()->SleepFor(absl::Seconds(3));
        const absl::Time restart = absl::Now();
        CHECK((*pg)->Restart().ok());
        restart_took = absl::Now() - restart;
      });
    }
  });
  // Joined before any REQUIRE: a failure here must end the test, not abort
  // it with the thread still running (which orphans the services).
  if (db_crash.joinable()) db_crash.join();
  // The store reconnects for 30 s; a slower restart is the machine's, and
  // says so here.
  INFO("PostgreSQL took " << absl::FormatDuration(restart_took) << " to restart; " << watched.ToString());
  REQUIRE(watched.ok());
  REQUIRE(events.size() > 3);
  for (size_t i = 0; i < events.size(); ++i) CHECK(events[i].sequence() == last_seq + 1 + static_cast<int64_t>(i));
  auto run = (*client)->GetRun(run_id, RequestContext());
  REQUIRE(run.ok());
  INFO(run->DebugString());
  CHECK(run->state() == v1::RUN_STATE_SUCCEEDED);
  // 2 tasks x 2 stages x 5 completions, each scored once.
  CHECK(run->candidates() == 20);
  CHECK(run->infra_failures() == 0);
  CHECK(run->rejected() == 4);          // the prose answers
  CHECK(run->variants_correct() >= 4);  // fast and slow, both tasks, both stages
  // (How many verified candidates count as faster depends on how quiet the
  // machine is: on a loaded one the oracle may flag timings NOISY and
  // withhold their rewards. Checked below: withheld always with a flag.)

  // Every candidate once in the export, with real verdicts.
  v1::ExportRunRequest ex;
  ex.set_run_id(run_id);
  ex.set_format("jsonl");
  ex.set_out_dir(dir.path() + "/export");
  REQUIRE((*client)->ExportRun(ex, RequestContext()).ok());
  auto lines = ReadFileToString(dir.path() + "/export/variants.jsonl", "export");
  REQUIRE(lines.ok());
  std::set<std::string> keys;
  std::map<std::string, int> verdicts;
  // What the trainer must have been given: keep-successes examples (verified,
  // trusted) and contrastive-rl groups whose trusted rewards differ.
  int examples = 0;
  std::map<std::string, std::set<double>> grpo_rewards;
  for (const auto& line : absl::StrSplit(*lines, '\n', absl::SkipEmpty())) {
    const json v = json::parse(std::string(line));
    keys.insert(v["key"].get<std::string>());
    verdicts[v.value("verdict", std::string("none"))]++;
    const bool trusted = v.contains("reward") && v["reward"].value("status", std::string()) == "REWARD_STATUS_OK";
    // Keep-successes imitates what verified with no flag that says it may
    // cheat; a NOISY timing (a loaded machine) withholds the reward only.
    bool may_cheat = false;
    for (const auto& f : v.value("flags", json::array())) {
      v1::Flag flag;
      may_cheat |= !v1::Flag_Parse(f.get<std::string>(), &flag) || IsHonestyFlag(flag);
    }
    if (v.value("stage", std::string()) == "keep-successes" && !may_cheat &&
        v.value("verdict", std::string()) == "VERDICT_OK") {
      ++examples;
    }
    if (v.value("stage", std::string()) == "contrastive-rl" && trusted) {
      grpo_rewards[v["task_name"].get<std::string>()].insert(v["reward"].value("reward", 0.0));
    }
    if (v.value("verdict", std::string()) == "VERDICT_OK") {
      const std::string status = v["reward"].value("status", std::string());
      CHECK((status == "REWARD_STATUS_OK" || status == "REWARD_STATUS_WITHHELD"));
      if (status == "REWARD_STATUS_WITHHELD") CHECK(v.contains("flags"));
    }
  }
  CHECK(keys.size() == 20);
  CHECK(verdicts["VERDICT_WRONG_ANSWER"] >= 4);

  // Code and logs are on disk by content address, not in the database rows;
  // the export has them back, with each evaluation's log. Each distinct
  // text is one file however many variants and events repeat it.
  std::set<std::string> completions, completion_addresses;
  for (const auto& line : absl::StrSplit(*lines, '\n', absl::SkipEmpty())) {
    const json v = json::parse(std::string(line));
    completions.insert(v.value("completion", std::string()));
    const std::string address = v["content"].value("completion", std::string());
    completion_addresses.insert(address);
    REQUIRE(address.size() == 7 + 64);
    CHECK(ReadFileToString(dir.path() + "/orchestrator/content/sha256/" + address.substr(7, 2) + "/" +
                               address.substr(7), "content")
              .value_or("") == v.value("completion", std::string()));
    if (v.contains("verdict")) {
      CHECK(v["candidate"].contains("source"));
      // A copy of a program scored earlier in its group names that copy
      // first, then carries its log (services/orchestrator/program_share.h).
      const std::string log = v.value("log", std::string());
      CHECK((absl::StartsWith(log, "evaluated on ") ||
             (absl::StartsWith(log, "the same program as s") && absl::StrContains(log, "\nevaluated on "))));
    }
  }
  CHECK(completion_addresses.size() == completions.size());
  CHECK(completions.size() <= 10);  // 20 candidates, 5 distinct answers per task
  auto rows_with_code = (*pg)->Psql(
      "SELECT (SELECT count(*) FROM variants WHERE position('crl_run'::bytea in variant) > 0) + "
      "(SELECT count(*) FROM events WHERE position('crl_run'::bytea in event) > 0);");
  REQUIRE(rows_with_code.ok());
  CHECK(*rows_with_code == "0\n");
  auto best = (*client)->GetBestVariants([&] {
    v1::GetBestVariantsRequest b;
    b.set_run_id(run_id);
    b.set_limit(1);
    return b;
  }(), RequestContext());
  REQUIRE(best.ok());
  CHECK(best->variants_size() <= 2);  // one per task at most, trusted ones only
  for (const auto& b : best->variants()) CHECK(b.reward().status() == v1::REWARD_STATUS_OK);

  // The trainer took the run's groups: two keep-successes example sets and
  // two GRPO groups, each one step (groups_per_step / examples_per_step 1).
  ClientOptions patient;
  patient.timeout = absl::Minutes(10);
  auto t = GrpcTrainerClient::Create(trainer.grpc_address(), patient);
  REQUIRE(t.ok());
  std::string errors;
  for (const auto& e : events) {
    if (e.kind() == "error") errors += e.message() + "\n";
  }
  INFO(errors);
  CHECK(errors.empty());
  // Training runs behind the submissions: Flush trains what is queued and
  // returns (on a loaded 2-core machine a step of ~5,000-token sequences takes
  // seconds, so the deadline is generous).
  RequestContext flush_ctx(RealClock::Get(), absl::Now() + absl::Minutes(10));
  REQUIRE((*t)->Flush(flush_ctx).ok());
  auto version = (*t)->GetPolicyVersion(RequestContext());
  REQUIRE(version.ok());
  // One step per example (examples_per_step 1) and at most one per group
  // that teaches something (groups_per_step 1; the trainer may still drop a
  // group as stale).
  int groups = 0;
  for (const auto& [task, rewards] : grpo_rewards) groups += rewards.size() > 1;
  INFO("examples " << examples << ", groups " << groups);
  CHECK(version->step() >= examples);
  CHECK(version->step() <= examples + groups);
}

}  // namespace crl::testing
