// crl quickstart: what `make run` runs. A local cluster (local_cluster.h)
// with the embedded policy, then three runs through it:
//   1. examples/embedded-sft.yaml: SFT on the shipped correct candidates;
//   2. examples/embedded.yaml with training off (the untrained twin);
//   3. examples/embedded.yaml: keep-the-successes and contrastive RL.
// The twin runs before the trained run, so both start from the policy stage
// 1 left, with the same seed (their first rounds sample the same
// completions). The report (runs/<id>/report.html) puts them side by side.
//
//   crl quickstart [--quick] [--data_dir runs] [--keep_up]
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "common/file.h"
#include "common/paths.h"
#include "common/status.h"
#include "lib/run/run_spec.h"
#include "services/cli/commands.h"
#include "services/cli/local_cluster.h"
#include "services/orchestrator/orchestrator_client.h"
#include "services/sampler/sampler_client.h"
#include "services/trainer/trainer_client.h"

namespace crl::cli {
namespace {

namespace fs = std::filesystem;

// --quick: the same pipeline at a size a test can afford (two tasks, short
// stages, small groups).
void MakeQuick(v1::RunSpec* spec, int sft_epochs) {
  while (spec->tasks_size() > 2) spec->mutable_tasks()->RemoveLast();
  google::protobuf::RepeatedPtrField<v1::SftExample> kept;
  for (const auto& e : spec->sft_examples()) {
    for (const auto& t : spec->tasks()) {
      if (t.name() == e.task_name()) *kept.Add() = e;
    }
  }
  *spec->mutable_sft_examples() = kept;
  for (auto& st : *spec->mutable_stages()) st.set_rounds(st.kind() == "sft" ? sft_epochs : 1);
  if (spec->group_size() > 2) spec->set_group_size(2);
  if (spec->max_tokens() == 0 || spec->max_tokens() > 400) spec->set_max_tokens(400);
}

std::string Elapsed(absl::Time since) { return absl::StrFormat("%4.0fs", absl::ToDoubleSeconds(absl::Now() - since)); }

// Retries `call` while a service is down or restarting (the local cluster's
// supervisor brings it back), for up to two minutes.
template <typename T>
absl::StatusOr<T> Patiently(const std::function<absl::StatusOr<T>()>& call) {
  const absl::Time deadline = absl::Now() + absl::Minutes(2);
  for (;;) {
    absl::StatusOr<T> r = call();
    const auto code = r.status().code();
    if (r.ok() || (code != absl::StatusCode::kUnavailable && code != absl::StatusCode::kDeadlineExceeded) ||
        absl::Now() > deadline) {
      return r;
    }
    absl::SleepFor(absl::Seconds(1));
  }
}

// Follows a run to its end, one line per stage, round and end; on a
// terminal also a line per candidate, redrawn in place.
absl::StatusOr<v1::Run> Follow(OrchestratorClientInterface* c, const std::string& run_id, const std::string& label,
                               absl::Time start) {
  const bool tty = isatty(STDOUT_FILENO);
  int64_t after = 0;
  v1::Run last;
  for (int failures = 0;;) {
    v1::WatchRunRequest req;
    req.set_run_id(run_id);
    req.set_after_sequence(after);
    absl::Status s = c->WatchRun(req, RequestContext(), [&](const v1::RunEvent& e) {
      after = e.sequence();
      last = e.run();
      const v1::Run& r = e.run();
      if (e.kind() == "variant") {
        if (tty) {
          std::printf("\r%s [%s] %d candidates: %d verified, %d faster, %d rejected   ", Elapsed(start).c_str(),
                      label.c_str(), r.candidates(), r.variants_correct(), r.faster(), r.rejected());
        }
      } else if (e.kind() == "round" || e.kind() == "stage" || e.kind() == "state" || e.kind() == "error" ||
                 e.kind() == "waiting") {
        std::printf("%s%s [%s] %s — %d candidates, %d verified, %d faster, mean reward %.3f, policy %s\n",
                    tty ? "\r" : "", Elapsed(start).c_str(), label.c_str(), e.message().c_str(), r.candidates(),
                    r.variants_correct(), r.faster(), r.rewarded() ? r.reward_sum() / r.rewarded() : 0.0,
                    r.policy_version().empty() ? "-" : r.policy_version().c_str());
      }
      std::fflush(stdout);
    });
    if (s.ok()) break;
    if (++failures > 120) return s;
    absl::SleepFor(absl::Seconds(1));
  }
  return Patiently<v1::Run>([&] { return c->GetRun(run_id, RequestContext()); });
}

// Waits until the sampler serves the trainer's latest version (the policy
// the next run must start from).
absl::Status AwaitSamplerCaughtUp(SamplerClientInterface* sampler, TrainerClientInterface* trainer) {
  const absl::Time deadline = absl::Now() + absl::Minutes(2);
  std::string want, have;
  for (;;) {
    auto t = trainer->GetPolicyVersion(RequestContext());
    auto p = sampler->ListPolicies(RequestContext());
    if (t.ok() && p.ok() && p->policies_size() > 0) {
      want = t->version();
      have = p->policies(0).version();
      if (want.empty() || want == have) return absl::OkStatus();
    }
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("the sampler serves version '", have, "', the trainer published '", want, "'"));
    }
    absl::SleepFor(absl::Milliseconds(200));
  }
}

absl::StatusOr<v1::Run> Submit(OrchestratorClientInterface* c, const v1::RunSpec& spec, const std::string& key) {
  v1::SubmitRunRequest req;
  *req.mutable_spec() = spec;
  req.set_idempotency_key(key);  // a retry returns the same run
  return Patiently<v1::Run>([&] { return c->SubmitRun(req, RequestContext()); });
}

}  // namespace

int QuickstartCommand(int argc, char** argv) {
  bool quick = false, keep_up = false;
  std::string data_dir = "runs", cluster_dir;
  int sft_epochs_quick = 3;
  OptionSet flags("crl quickstart",
                  "The embedded contrastive-RL run (what `make run` runs): a local cluster, the embedded policy "
                  "fine-tuned on the native suite's correct candidates, then keep-the-successes and contrastive-RL "
                  "rounds through the real services, beside an untrained twin; a report in <data_dir>/<run id>/.");
  flags.Add("quick", &quick, "two tasks, short stages (a test's size)");
  flags.Add("quick_sft_epochs", &sft_epochs_quick, "--quick: SFT epochs");
  flags.Add("data_dir", &data_dir, "where the cluster and the reports go");
  flags.Add("cluster_dir", &cluster_dir, "the local cluster's directory (default: <data_dir>/cluster-<time>)");
  flags.Add("keep_up", &keep_up, "leave the cluster running (crl down --data_dir <data_dir>/cluster-... stops it)");
  std::vector<std::string> args;
  absl::Status parsed = flags.Parse(argc, argv, &args);
  if (!parsed.ok() || flags.help_requested()) return UsageError(flags, parsed);

  const std::string examples = FindShippedDir("examples");
  const std::string models = FindShippedDir("models/embedded");
  if (examples.empty() || models.empty()) return Fail(absl::FailedPreconditionError("examples/ or models/ not found"));
  // Task paths in the example specs are relative to the repository root.
  auto load = [&](const std::string& name) -> absl::StatusOr<v1::RunSpec> {
    const std::string path = examples + "/" + name;
    CRL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path, "run spec"));
    return run::ParseRunSpec(text, fs::path(examples).parent_path().string(), path);
  };
  auto sft = load("embedded-sft.yaml");
  auto rl = load("embedded.yaml");
  if (!sft.ok()) return Fail(sft.status());
  if (!rl.ok()) return Fail(rl.status());
  if (quick) {
    MakeQuick(&*sft, sft_epochs_quick);
    MakeQuick(&*rl, sft_epochs_quick);
  }
  v1::RunSpec twin = *rl;
  twin.set_training("none");
  twin.set_name(rl->name() + "-untrained");

  const absl::Time start = absl::Now();
  LocalClusterOptions lc;
  lc.data_dir = !cluster_dir.empty() ? cluster_dir
                                     : (fs::path(data_dir) / absl::FormatTime("cluster-%Y%m%d-%H%M%S", start,
                                                                              absl::LocalTimeZone()))
                                           .string();
  if (absl::Status s = LoadOverlay(models + "/cluster.yaml", &lc.overrides); !s.ok()) return Fail(s);
  std::printf("crl quickstart%s: a local cluster in %s, then SFT, an untrained twin and the RL run "
              "(%s on two cores)\n",
              quick ? " --quick" : "", lc.data_dir.c_str(), quick ? "a few minutes" : "about 10-15 minutes");
  std::fflush(stdout);
  auto cluster = StartLocalCluster(lc);
  if (!cluster.ok()) return Fail(cluster.status());
  std::printf("%s cluster up: six services on loopback (crl status --data_dir %s)\n", Elapsed(start).c_str(),
              lc.data_dir.c_str());
  auto stop = [&] {
    if (keep_up) return;
    absl::Status s = StopLocalCluster(lc.data_dir);
    if (!s.ok()) std::fprintf(stderr, "warning: stopping the cluster: %s\n", s.ToString().c_str());
  };
  const ClientOptions client = LocalClusterClient(*cluster);
  const auto& services = (*cluster)["services"];
  auto orch = GrpcOrchestratorClient::Create(services["orchestrator"]["address"].get<std::string>(), client);
  auto sampler = GrpcSamplerClient::Create(services["sampler"]["address"].get<std::string>(), client);
  auto trainer = GrpcTrainerClient::Create(services["trainer"]["address"].get<std::string>(), client);
  if (!orch.ok() || !sampler.ok() || !trainer.ok()) {
    stop();
    return Fail(!orch.ok() ? orch.status() : !sampler.ok() ? sampler.status() : trainer.status());
  }
  auto fail = [&](const absl::Status& s) {
    stop();
    return Fail(s);
  };

  std::vector<v1::Run> done;
  for (const auto& [label, spec] : std::vector<std::pair<std::string, const v1::RunSpec*>>{
           {"sft", &*sft}, {"untrained", &twin}, {"trained", &*rl}}) {
    if (label != "sft") {
      if (absl::Status s = AwaitSamplerCaughtUp(sampler->get(), trainer->get()); !s.ok()) return fail(s);
    }
    auto run = Submit(orch->get(), *spec, absl::StrCat("quickstart-", label));
    if (!run.ok()) return fail(run.status());
    std::printf("%s [%s] run %s submitted\n", Elapsed(start).c_str(), label.c_str(), run->run_id().c_str());
    auto end = Follow(orch->get(), run->run_id(), label, start);
    if (!end.ok()) return fail(end.status());
    if (end->state() != v1::RUN_STATE_SUCCEEDED) {
      return fail(absl::AbortedError(absl::StrCat("run ", end->run_id(), " ended ", v1::RunState_Name(end->state()),
                                                  ": ", end->error())));
    }
    done.push_back(*end);
  }
  const v1::Run& trained = done[2];
  const std::string out = fs::absolute(fs::path(data_dir) / trained.run_id()).string();
  v1::ExportRunRequest ex;
  ex.set_run_id(trained.run_id());
  ex.set_format("report");
  ex.set_out_dir(out);
  ex.set_baseline_run_id(done[1].run_id());
  auto exported =
      Patiently<v1::ExportRunResponse>([&] { return (*orch)->ExportRun(ex, RequestContext()); });
  if (!exported.ok()) return fail(exported.status());
  stop();
  auto text = ReadFileToString(out + "/summary.txt", "summary");
  std::printf("\n%s", text.ok() ? text->c_str() : "");
  std::printf("\nSFT run %s: %d examples verified of %d\n", done[0].run_id().c_str(), done[0].variants_correct(),
              done[0].candidates());
  std::printf("report: %s/report.html (plots: *.png, numbers: summary.json); took %s\n", out.c_str(),
              Elapsed(start).c_str());
  if (keep_up) std::printf("the cluster is still up: crl down --data_dir %s\n", lc.data_dir.c_str());
  return 0;
}

}  // namespace crl::cli
