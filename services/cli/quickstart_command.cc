// crl quickstart: what `make run` runs. A local cluster (local_cluster.h)
// with the embedded policy, then:
//   1. examples/embedded-sft.yaml: SFT on the shipped correct candidates (a
//      slow and a fast one per task; blind to their speed), whose weights the
//      trainer keeps as snapshot "sft";
//   2. per seed: the SFT weights restored, examples/embedded.yaml with
//      training off (the untrained twin); the SFT weights restored again, the
//      same spec trained (its RL stage starts a trainer phase of its own:
//      fresh optimizer, its own schedule); with --control, the weights
//      restored once more and the negative control (the same run, each
//      group's rewards permuted before the trainer sees them).
// Twin and trained side share the starting policy, the seed and the prompt
// template, so their first round samples the same completions (an A/A check).
// The report (runs/<id>/report.html) puts the first seed's pair side by
// side; learning.txt / learning.json say what training did over the seeds
// (lib/report/learning.h: F per round, Δ with a bootstrap CI, a sign test).
//
//   crl quickstart [--quick] [--seeds N] [--control] [--data_dir runs] [--keep_up]
//
// The same experiment on other tasks and another policy (scripts/gpu-run.sh:
// KernelBench tasks, CUDA-L1's rows as SFT examples, on a GPU machine):
// --sft_spec and --spec replace the two example specs, --overlay adds a
// cluster overlay after models/embedded/cluster.yaml, --policy_dir starts
// from a prepared policy instead of the embedded one, and --heldout_spec
// samples tasks no side trains on, after the twin and after the trained run.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <google/protobuf/util/json_util.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "common/file.h"
#include "common/paths.h"
#include "common/status.h"
#include "lib/report/chart.h"
#include "lib/report/learning.h"
#include "lib/run/run_spec.h"
#include "lib/stats/stats.h"
#include "services/cli/commands.h"
#include "services/cli/local_cluster.h"
#include "services/cli/progress_bar.h"
#include "services/orchestrator/grpc_orchestrator_client.h"
#include "services/sampler/grpc_sampler_client.h"
#include "services/trainer/grpc_trainer_client.h"

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

// Follows a run to its end, one line per stage and end, and per round at
// most one every 5 s (the last of a stage's rounds always); on a terminal
// also a line per candidate, redrawn in place.
absl::StatusOr<v1::Run> Follow(OrchestratorClientInterface* c, const std::string& run_id, const std::string& label,
                               absl::Time start) {
  const bool tty = isatty(STDOUT_FILENO);
  int64_t after = 0;
  v1::Run last;
  LineThinner lines(absl::Seconds(5));
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
        std::string line = absl::StrFormat(
            "%s%s [%s] %s — %d candidates, %d verified, %d faster, mean reward %.3f, policy %s\n", tty ? "\r" : "",
            Elapsed(start), label, e.message(), r.candidates(), r.variants_correct(), r.faster(),
            r.rewarded() ? r.reward_sum() / r.rewarded() : 0.0,
            r.policy_version().empty() ? "-" : r.policy_version());
        for (const std::string& l : e.kind() == "round" ? lines.Frequent(line) : lines.Always(line)) {
          std::fputs(l.c_str(), stdout);
        }
      }
      std::fflush(stdout);
    });
    if (s.ok()) break;
    if (++failures > 120) return s;
    absl::SleepFor(absl::Seconds(1));
  }
  for (const std::string& l : lines.Flush()) std::fputs(l.c_str(), stdout);
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

// A run's variants, exported as JSON lines into `dir` (the local cluster's
// orchestrator shares this machine's disk) and read back.
absl::StatusOr<std::vector<v1::Variant>> RunVariants(OrchestratorClientInterface* c, const std::string& run_id,
                                                     const std::string& dir) {
  v1::ExportRunRequest ex;
  ex.set_run_id(run_id);
  ex.set_format("jsonl");
  ex.set_out_dir(dir);
  CRL_RETURN_IF_ERROR(Patiently<v1::ExportRunResponse>([&] { return c->ExportRun(ex, RequestContext()); }).status());
  CRL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(dir + "/variants.jsonl", "exported variants"));
  std::vector<v1::Variant> out;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    v1::Variant v;
    google::protobuf::util::JsonParseOptions o;
    o.ignore_unknown_fields = true;
    if (!google::protobuf::util::JsonStringToMessage(std::string(line), &v, o).ok()) {
      return absl::DataLossError(absl::StrCat(dir, "/variants.jsonl: a line is not a variant"));
    }
    out.push_back(std::move(v));
  }
  return out;
}

// The trainer's weights back to snapshot "sft" (a new version), and the
// sampler serving it: every side of every seed starts from the same policy.
absl::Status RestoreSft(TrainerClientInterface* trainer, SamplerClientInterface* sampler, const std::string& phase) {
  v1::BeginPhaseRequest req;
  req.set_phase_id(phase);
  req.set_restore_snapshot("sft");
  CRL_RETURN_IF_ERROR(Patiently<v1::PolicyVersion>([&] { return trainer->BeginPhase(req, RequestContext()); }).status());
  return AwaitSamplerCaughtUp(sampler, trainer);
}

// F per sampled round over the seeds, both sides (and the control): the mean
// over seeds, with the seeds' lowest and highest as the band.
report::Chart LearningChart(const report::LearningSummary& learned, const report::LearningSummary* control) {
  report::Chart c;
  c.title = "F per round: verified with a trusted speedup > 1 (mean over seeds; band: lowest to highest seed)";
  c.percent = true;
  c.y_max = 1;
  if (learned.seeds.empty()) return c;
  for (const auto& r : learned.seeds.front().rounds) c.x_labels.push_back(r.label);
  auto series = [&](const report::LearningSummary& s, bool twin, const std::string& name, uint32_t rgb, bool dashed) {
    report::Series out{name, {}, rgb, 0, dashed};
    for (size_t i = 0; i < c.x_labels.size(); ++i) {
      std::vector<double> fs;
      for (const auto& seed : s.seeds) {
        if (i < seed.rounds.size()) fs.push_back(twin ? seed.rounds[i].twin.F() : seed.rounds[i].trained.F());
      }
      const bool any = !fs.empty();
      out.values.push_back(any ? stats::Mean(fs) : std::nan(""));
      out.low.push_back(any ? *std::min_element(fs.begin(), fs.end()) : std::nan(""));
      out.high.push_back(any ? *std::max_element(fs.begin(), fs.end()) : std::nan(""));
    }
    return out;
  };
  c.series.push_back(series(learned, false, "trained", 0x1f77b4, false));
  c.series.push_back(series(learned, true, "untrained twin", 0x9a9a9a, false));
  if (control) c.series.push_back(series(*control, false, "negative control (rewards permuted)", 0xd62728, true));
  return c;
}

}  // namespace

int QuickstartCommand(int argc, char** argv) {
  bool quick = false, keep_up = false, control = false;
  std::string data_dir = "runs", cluster_dir, sft_spec_file, spec_file, heldout_spec_file, overlay, policy_dir;
  int sft_epochs_quick = 3, seeds = 1, evaluation_rounds = 0;
  int64_t first_seed = 0;
  OptionSet flags("crl quickstart",
                  "The embedded contrastive-RL run (what `make run` runs): a local cluster, the embedded policy "
                  "fine-tuned on the native suite's correct candidates, then RL rounds through the real services, "
                  "beside an untrained twin that starts from the same policy; a report in <data_dir>/<run id>/ and "
                  "what training did (learning.txt).");
  flags.Add("quick", &quick, "two tasks, short stages (a test's size)");
  flags.Add("quick_sft_epochs", &sft_epochs_quick, "--quick: SFT epochs");
  flags.Add("seeds", &seeds,
            "pairs of runs (twin and trained), each from the SFT weights with its own seed: Δ's CI resamples them");
  flags.Add("first_seed", &first_seed, "the first pair's seed (0: the spec's); the others follow it");
  flags.Add("control", &control,
            "also a negative control per seed: the trained run with each group's rewards permuted (its Δ should be "
            "no different from 0)");
  flags.Add("evaluation_rounds", &evaluation_rounds,
            "the last this many sampled rounds are where Δ is measured (0: the later half)");
  flags.Add("data_dir", &data_dir, "where the cluster and the reports go");
  flags.Add("cluster_dir", &cluster_dir, "the local cluster's directory (default: <data_dir>/cluster-<time>)");
  flags.Add("keep_up", &keep_up, "leave the cluster running (crl down --data_dir <data_dir>/cluster-... stops it)");
  flags.Add("sft_spec", &sft_spec_file, "the SFT stage's run spec (default: the shipped examples/embedded-sft.yaml)");
  flags.Add("spec", &spec_file,
            "the RL run's spec, run as twin, trained side and control (default: examples/embedded.yaml)");
  flags.Add("heldout_spec", &heldout_spec_file,
            "tasks never trained on: sampled once (training none) after the twin and after the trained run of each "
            "seed, reported beside Δ");
  flags.Add("overlay", &overlay,
            "a cluster overlay applied after models/embedded/cluster.yaml (service: {flag: value}), e.g. the GPU's");
  flags.Add("policy_dir", &policy_dir, "the starting policy (default: the embedded one, made on first use)");
  std::vector<std::string> args;
  absl::Status parsed = flags.Parse(argc, argv, &args);
  if (!parsed.ok() || flags.help_requested()) return UsageError(flags, parsed);
  if (seeds < 1 || seeds > 100) return UsageError(flags, absl::InvalidArgumentError("seeds: 1 to 100"));

  const std::string examples = FindShippedDir("examples");
  const std::string models = FindShippedDir("models/embedded");
  if (examples.empty() || models.empty()) return Fail(absl::FailedPreconditionError("examples/ or models/ not found"));
  // Task paths in the example specs are relative to the spec files.
  auto load = [&](const std::string& name) { return run::LoadRunSpecFile(examples + "/" + name); };
  auto sft = sft_spec_file.empty() ? load("embedded-sft.yaml") : run::LoadRunSpecFile(sft_spec_file);
  auto rl = spec_file.empty() ? load("embedded.yaml") : run::LoadRunSpecFile(spec_file);
  if (!sft.ok()) return Fail(sft.status());
  if (!rl.ok()) return Fail(rl.status());
  std::optional<v1::RunSpec> heldout;
  if (!heldout_spec_file.empty()) {
    auto h = run::LoadRunSpecFile(heldout_spec_file);
    if (!h.ok()) return Fail(h.status());
    heldout = *std::move(h);
    heldout->set_training("none");
  }
  if (quick) {
    MakeQuick(&*sft, sft_epochs_quick);
    MakeQuick(&*rl, sft_epochs_quick);
  }
  if (first_seed > 0) rl->set_seed(static_cast<uint64_t>(first_seed));

  const absl::Time start = absl::Now();
  LocalClusterOptions lc;
  lc.data_dir = !cluster_dir.empty() ? cluster_dir
                                     : (fs::path(data_dir) / absl::FormatTime("cluster-%Y%m%d-%H%M%S", start,
                                                                              absl::LocalTimeZone()))
                                           .string();
  if (absl::Status s = LoadOverlay(models + "/cluster.yaml", &lc.overrides); !s.ok()) return Fail(s);
  if (!overlay.empty()) {
    if (absl::Status s = LoadOverlay(overlay, &lc.overrides); !s.ok()) return Fail(s);
  }
  lc.policy_dir = policy_dir;
  std::printf("crl quickstart%s: a local cluster in %s, then SFT, and %d seed(s) of an untrained twin and the "
              "trained run%s (%s)\n",
              quick ? " --quick" : "", lc.data_dir.c_str(), seeds, control ? " and a negative control" : "",
              !sft_spec_file.empty() || !spec_file.empty() ? "as long as your specs take"
              : quick                                       ? "a few minutes on two cores"
              : seeds == 1 && !control                      ? "about 20 minutes on two cores"
                                                            : "on two cores about 10 minutes, then 12 a seed (18 with "
                                                              "the control)");
  std::fflush(stdout);
  // Ctrl-C (or a scheduler's SIGTERM) takes the cluster down with the command.
  if (!keep_up) StopLocalClusterOnSignal(lc.data_dir);
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
  // One run to its end; what did not succeed ends the command.
  auto run = [&](const v1::RunSpec& spec, const std::string& label) -> absl::StatusOr<v1::Run> {
    CRL_ASSIGN_OR_RETURN(v1::Run submitted, Submit(orch->get(), spec, absl::StrCat("quickstart-", label)));
    std::printf("%s [%s] run %s submitted\n", Elapsed(start).c_str(), label.c_str(), submitted.run_id().c_str());
    CRL_ASSIGN_OR_RETURN(v1::Run end, Follow(orch->get(), submitted.run_id(), label, start));
    if (end.state() != v1::RUN_STATE_SUCCEEDED) {
      return absl::AbortedError(absl::StrCat("run ", end.run_id(), " ended ", v1::RunState_Name(end.state()), ": ",
                                             end.error()));
    }
    return end;
  };
  const std::string work = fs::absolute(fs::path(lc.data_dir) / "quickstart").string();

  // Stage 1: SFT, kept as snapshot "sft".
  auto sft_run = run(*sft, "sft");
  if (!sft_run.ok()) return fail(sft_run.status());
  {
    v1::BeginPhaseRequest keep;
    keep.set_phase_id(absl::StrCat("quickstart/", sft_run->run_id()));
    keep.set_save_snapshot("sft");
    auto kept = Patiently<v1::PolicyVersion>([&] { return (*trainer)->BeginPhase(keep, RequestContext()); });
    if (!kept.ok()) return fail(kept.status());
  }
  auto sft_variants = RunVariants(orch->get(), sft_run->run_id(), work + "/sft");
  if (!sft_variants.ok()) return fail(sft_variants.status());
  if (sft_run->variants_correct() == 0) {
    // Nothing to learn from: RL from an untrained policy measures nothing,
    // and an infrastructure failure is no result.
    std::string why = "no variant";
    if (!sft_variants->empty()) {
      const v1::Variant& v = sft_variants->front();
      why = v.infra_failure()                                ? v.infra_detail()
            : v.parse_error() != v1::PARSE_ERROR_UNSPECIFIED ? "did not parse: " + v1::ParseError_Name(v.parse_error())
                                                             : v1::Verdict_Name(v.verdict());
    }
    return fail(absl::FailedPreconditionError(absl::StrCat("SFT run ", sft_run->run_id(), " verified none of its ",
                                                           sft_run->candidates(), " examples; the first: ", why)));
  }

  // Stage 2, per seed: twin, trained, and the control, each from the SFT weights.
  std::vector<report::SeedRuns> pairs, controls;
  std::vector<v1::Variant> heldout_trained, heldout_twin;  // over the seeds
  v1::Run twin_run, trained_run;  // the first seed's, for the report
  for (int k = 0; k < seeds; ++k) {
    v1::RunSpec trained_spec = *rl;
    trained_spec.set_seed(rl->seed() + static_cast<uint64_t>(k));
    v1::RunSpec twin_spec = trained_spec;
    twin_spec.set_training("none");
    twin_spec.set_name(rl->name() + "-untrained");
    v1::RunSpec control_spec = trained_spec;
    control_spec.set_control("permuted-rewards");
    control_spec.set_name(rl->name() + "-control");
    report::SeedRuns pair, ctl;
    pair.seed = ctl.seed = trained_spec.seed();
    struct Side {
      std::string kind;
      const v1::RunSpec* spec;
      std::vector<v1::Variant>* variants;
      v1::Run* keep;  // the first seed's run, where the report needs it
    };
    std::vector<Side> sides = {{"untrained", &twin_spec, &pair.twin, k == 0 ? &twin_run : nullptr},
                               {"trained", &trained_spec, &pair.trained, k == 0 ? &trained_run : nullptr}};
    if (control) sides.push_back({"control", &control_spec, &ctl.trained, nullptr});
    for (const Side& side : sides) {
      const std::string label = seeds > 1 ? absl::StrCat(side.kind, "-seed", trained_spec.seed()) : side.kind;
      if (absl::Status s = RestoreSft(trainer->get(), sampler->get(), absl::StrCat("quickstart/", label)); !s.ok()) {
        return fail(s);
      }
      auto end = run(*side.spec, label);
      if (!end.ok()) return fail(end.status());
      auto vs = RunVariants(orch->get(), end->run_id(), absl::StrCat(work, "/", label));
      if (!vs.ok()) return fail(vs.status());
      *side.variants = *std::move(vs);
      if (side.keep) *side.keep = *end;
      if (heldout && side.kind != "control") {
        // The policy this side ended with, on tasks it never saw trained.
        if (absl::Status s = AwaitSamplerCaughtUp(sampler->get(), trainer->get()); !s.ok()) return fail(s);
        v1::RunSpec h = *heldout;
        h.set_seed(trained_spec.seed());
        auto held_end = run(h, label + "-heldout");
        if (!held_end.ok()) return fail(held_end.status());
        auto hv = RunVariants(orch->get(), held_end->run_id(), absl::StrCat(work, "/", label, "-heldout"));
        if (!hv.ok()) return fail(hv.status());
        auto& into = side.kind == "trained" ? heldout_trained : heldout_twin;
        into.insert(into.end(), hv->begin(), hv->end());
      }
    }
    ctl.twin = pair.twin;
    pairs.push_back(std::move(pair));
    if (control) controls.push_back(std::move(ctl));
  }
  const std::string out = fs::absolute(fs::path(data_dir) / trained_run.run_id()).string();
  v1::ExportRunRequest ex;
  ex.set_run_id(trained_run.run_id());
  ex.set_format("report");
  ex.set_out_dir(out);
  ex.set_baseline_run_id(twin_run.run_id());
  auto exported = Patiently<v1::ExportRunResponse>([&] { return (*orch)->ExportRun(ex, RequestContext()); });
  if (!exported.ok()) return fail(exported.status());
  stop();

  // What training did, over the seeds.
  report::LearningOptions lo;
  lo.evaluation_rounds = evaluation_rounds;
  const auto answers = report::KnownAnswersFrom(*sft_variants);
  const report::LearningSummary learned = report::CompareSeeds(pairs, answers, lo);
  std::string learning = report::LearningText(learned, "Trained against the untrained twin:");
  nlohmann::json learning_json = {{"trained", report::LearningJson(learned)}};
  report::LearningSummary controlled;
  if (control) {
    controlled = report::CompareSeeds(controls, answers, lo);
    absl::StrAppend(&learning, "\n", report::LearningText(controlled, "Negative control (rewards permuted) against "
                                                                     "the untrained twin:"));
    learning_json["control"] = report::LearningJson(controlled);
  }
  if (heldout) {
    const report::SideRound tr = report::PooledSamples(heldout_trained), tw = report::PooledSamples(heldout_twin);
    absl::StrAppend(&learning, "\nHeld-out tasks (", heldout->tasks_size(), ", never trained on; sampled once per seed "
                               "and side):\n", report::HeldOutText(tr, tw));
    learning_json["heldout"] = report::HeldOutJson(tr, tw);
  }
  for (const auto& [name, content] :
       {std::pair<std::string, std::string>{"learning.txt", learning}, {"learning.json", learning_json.dump(2)}}) {
    if (absl::Status s = WriteStringToFile(out + "/" + name, content + "\n"); !s.ok()) return Fail(s);
  }
  if (absl::Status s = report::WritePng(LearningChart(learned, control ? &controlled : nullptr), out + "/learning.png");
      !s.ok()) {
    return Fail(s);
  }
  auto text = ReadFileToString(out + "/summary.txt", "summary");
  std::printf("\n%s\n%s", text.ok() ? text->c_str() : "", learning.c_str());
  std::printf("\nSFT run %s: %d examples verified of %d\n", sft_run->run_id().c_str(), sft_run->variants_correct(),
              sft_run->candidates());
  std::printf("report: %s/report.html (plots: *.png, numbers: summary.json; over the seeds: learning.txt, "
              "learning.json, learning.png); took %s\n",
              out.c_str(), Elapsed(start).c_str());
  if (keep_up) std::printf("the cluster is still up: crl down --data_dir %s\n", lc.data_dir.c_str());
  return 0;
}

}  // namespace crl::cli
