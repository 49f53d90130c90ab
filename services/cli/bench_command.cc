// crl bench / crl baseline: KernelBench-format batch evaluation.
//
//   crl bench --tasks DIR --generations DIR [--baseline FILE] --out results.json
//   crl bench --cuda-l1 FILE.jsonl --out results.json
//   crl baseline --tasks DIR --out baseline.json
//
// Every sample goes through the same worker path as `crl eval --time`:
// sandboxed build, verification against the task's Model in another
// process, then the timing oracle's interleaved pairs. Samples run
// concurrently (--jobs); the worker's lanes keep timing exclusive. Each
// finished sample is journaled (<out>.journal.jsonl, bench_journal.h), so a
// batch that is killed resumes where it was when run again.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/command.h"
#include "common/file.h"
#include "common/metrics.h"
#include "common/status.h"
#include "lib/kernelbench/baseline.h"
#include "lib/kernelbench/cuda_l1.h"
#include "lib/kernelbench/files.h"
#include "lib/kernelbench/results.h"
#include "lib/reward/names.h"
#include "services/cli/batch_eval.h"
#include "services/cli/bench_journal.h"
#include "services/cli/commands.h"
#include "services/cli/endpoints.h"
#include "services/cli/progress_bar.h"

namespace crl::cli {
namespace {

namespace fs = std::filesystem;

v1::Task KernelBenchTaskMessage(const std::string& name, const std::string& path, const std::string& content,
                bool remote) {
  v1::Task task;
  task.set_format(v1::TASK_FORMAT_KERNELBENCH);
  task.set_name(name);
  if (!remote && !path.empty()) {
    task.set_path(fs::absolute(path).string());
  } else {
    v1::File* f = task.add_files();
    f->set_path("task.py");
    f->set_content(content);
  }
  return task;
}

absl::Status WriteJson(const std::string& path, const nlohmann::json& j) {
  return WriteFileAtomically(
      path, j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

// A usage error for flag combinations that cannot work, else infrastructure.
int ConnectFailed(const OptionSet& flags, const absl::Status& status) {
  if (status.code() == absl::StatusCode::kInvalidArgument) return UsageError(flags, status);
  return Fail(status);
}

// What the numbers were measured under, for `crl port-report`: the GPU as
// timing named it (else nvidia-smi's first), the driver, CUDA and torch of
// this machine (torch as `python3` on PATH imports it: the worker's, when
// it runs here), crl's version, the host and the time.
nlohmann::json Provenance(const std::string& device) {
  const std::string smi = CommandLine("timeout 20 nvidia-smi --query-gpu=name,driver_version --format=csv,noheader", false);
  const size_t comma = smi.find(',');
  const std::string smi_gpu = smi.substr(0, comma);
  const std::string driver = comma == std::string::npos ? "" : smi.substr(comma + 2);
  const std::string torch = CommandLine("timeout 20 python3 -c 'import torch; print(torch.__version__, torch.version.cuda or \"\")'", false);
  const size_t space = torch.find(' ');
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  return {{"gpu", !device.empty() ? device : smi_gpu},
          {"driver", driver},
          {"cuda", space == std::string::npos ? "" : torch.substr(space + 1)},
          {"torch", torch.substr(0, space)},
          {"crl", CrlVersion()},
          {"host", host},
          {"measured_at", absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(), absl::UTCTimeZone())}};
}

struct CommonFlags {
  std::string out;
  std::string journal;
  int jobs = 2;
  bool no_time = false;
  TimingSettings timing;
  EndpointFlags endpoints;

  void Bind(OptionSet* flags) {
    flags->Add("out", &out, "where to write the results JSON");
    flags->Add("journal", &journal,
               "finished samples, appended as they finish; a batch run again resumes from it "
               "(default <out>.journal.jsonl with --out; removed once the results are written; none: off)");
    flags->Add("jobs", &jobs, "samples evaluated concurrently (lanes still serialise timing)");
    flags->Add("no_time", &no_time, "verify only; skip the timing oracle");
    flags->Add("target_rel_ci", &timing.target_rel_ci,
               "stop timing at this relative CI half-width of the speedup (0: default)");
    flags->Add("budget_seconds", &timing.budget_seconds, "timing budget per sample (0: default)");
    flags->Add("min_sample_seconds", &timing.min_sample_seconds,
               "time short calls in batches lasting at least this long (0: default, 0.01 on a GPU; negative: one call "
               "per sample)");
    flags->Add("max_calls_per_sample", &timing.max_calls_per_sample,
               "most calls in one batched timing sample (0: default)");
    flags->Add("eager_timing", &timing.eager_timing,
               "time GPU calls as launched instead of replaying CUDA graphs of them (KernelBench's convention)");
    flags->Add("keep_for_timing_seconds", &timing.keep_for_timing_seconds,
               "keep a verified sample's two sides on the worker this long for its timing, which then starts none "
               "(0: timing starts its own; at most 60)");
    flags->Add("time_after_verify", &timing.time_after_verify,
               "verify every sample first, then time the verified ones (the GPU is emptied for timing once, not once "
               "per sample)");
    endpoints.client.timeout = absl::Minutes(20);
    endpoints.Bind(flags);
  }
  nlohmann::json Config(const std::string& device) const {
    return {{"atol", endpoints.local.kb_atol()},
            {"rtol", endpoints.local.kb_rtol()},
            {"timed", !no_time},
            {"target_rel_ci", timing.target_rel_ci},
            {"budget_seconds", timing.budget_seconds},
            {"min_sample_seconds", timing.min_sample_seconds},
            {"max_calls_per_sample", timing.max_calls_per_sample},
            {"eager_timing", timing.eager_timing},
            {"keep_for_timing_seconds", timing.keep_for_timing_seconds},
            {"time_after_verify", timing.time_after_verify},
            {"worker", endpoints.worker.empty() ? "in-process" : endpoints.worker},
            {"timing", endpoints.timing.empty() ? "in-process" : endpoints.timing},
            {"device", device}};
  }
  // The journal of this batch (null: none), and what keys its samples.
  absl::StatusOr<std::unique_ptr<BenchJournal>> OpenJournal() const {
    const std::string path = !journal.empty() ? journal : (out.empty() ? "none" : out + ".journal.jsonl");
    if (path == "none") return std::unique_ptr<BenchJournal>();
    return BenchJournal::Open(path);
  }
  // (The settings alone: the provenance, with its time, is added to the
  // results only, or no journal would ever resume.)
  std::string KeySettings() const { return Config("").dump(); }
  // After the results are written: the journal goes, unless samples hit
  // infrastructure errors (a rerun retries just those).
  void Done(BenchJournal* j, int infra) const {
    if (j == nullptr) return;
    if (infra > 0) {
      std::fprintf(stderr, "crl bench: %s kept: running the batch again retries the %d infrastructure error(s)\n",
                   j->path().c_str(), infra);
      return;
    }
    if (absl::Status s = j->Remove(); !s.ok()) std::fprintf(stderr, "crl bench: %s\n", s.ToString().c_str());
  }
};

// What the CUDA-L1 mode sets beyond the common flags (part of its journal key).
constexpr char kCudaL1Settings[] = ";reused_output_as_flag";

int CudaL1Bench(const std::string& path, CommonFlags& common, const OptionSet& flags) {
  auto rows = kb::ReadCudaL1(path);
  if (!rows.ok()) return UsageError(flags, rows.status());
  auto backend = Connect(common.endpoints, !common.no_time);
  if (!backend.ok()) return ConnectFailed(flags, backend.status());
  std::vector<kb::CudaL1Result> results(rows->size());
  std::vector<int> with_code;  // rows without custom_code are NO_KERNEL, never run
  for (int i = 0; i < static_cast<int>(rows->size()); ++i) {
    const kb::CudaL1Row& row = (*rows)[i];
    results[i].level_id = row.level_id;
    results[i].task_id = row.task_id;
    results[i].reported_score = row.score_default;
    if (row.custom_code) with_code.push_back(i);
    else results[i].status = "NO_KERNEL";
  }
  auto row_of = [&](int k) -> const kb::CudaL1Row& { return (*rows)[with_code[k]]; };
  auto journal = common.OpenJournal();
  if (!journal.ok()) return UsageError(flags, journal.status());
  std::vector<BatchSample> samples(with_code.size());
  for (size_t k = 0; k < with_code.size(); ++k) {
    const kb::CudaL1Row& row = row_of(k);
    samples[k].name = absl::StrCat("level ", row.level_id, " task ", row.task_id);
    samples[k].task = KernelBenchTaskMessage(absl::StrCat("level", row.level_id, "_task", row.task_id), "",
                             row.ref_code, true);
    samples[k].source = *row.custom_code;
    samples[k].filename = "custom_code.py";
    // Re-measuring published rows: one reusing its output buffer is timed
    // and shown with WRITE_AFTER_RETURN (its reward would be withheld), not
    // stopped as a WRONG_ANSWER without a number.
    samples[k].options.set_reused_output_as_flag(true);
    samples[k].key = BenchJournal::Key(common.KeySettings() + kCudaL1Settings, row.ref_code, samples[k].source);
  }
  std::vector<Outcome> outcomes = VerifyThenTime(*backend, common.timing, samples, common.jobs, journal->get());
  for (size_t k = 0; k < with_code.size(); ++k) {
    const Outcome& o = outcomes[k];
    kb::CudaL1Result& r = results[with_code[k]];
    r.status = o.evaluated ? VerdictShortName(o.verdict) : "INFRA_ERROR";
    r.correct = o.evaluated && o.verdict == v1::VERDICT_OK;
    r.custom_kernel = o.evaluated ? o.custom_kernel : kb::ContainsCustomKernel(*row_of(k).custom_code);
    r.flags = o.flags;
    r.message = o.message;
    r.max_abs_error = o.max_abs_error;
    r.max_rel_error = o.max_rel_error;
    r.verify_seconds = o.verify_seconds;
    r.time_seconds = o.time_seconds;
    if (o.timing) {
      r.speedup = o.timing->speedup();
      r.speedup_ci = std::make_pair(o.timing->speedup_ci_low(), o.timing->speedup_ci_high());
      r.timing_pairs = o.timing->ref_samples_size();
      r.calls_per_sample = o.timing->calls_per_sample();
      r.measure_seconds = o.timing->measure_seconds();
      r.timing_mode = o.timing->timing_mode();
      r.graph_fallback = o.timing->graph_fallback();
    }
  }
  std::string device;
  for (const auto& o : outcomes) {
    if (device.empty() && o.timing) device = o.timing->device_name();
  }
  nlohmann::json config = common.Config(device);
  config["provenance"] = Provenance(device);
  config["reused_output_as_flag"] = true;
  nlohmann::json j = {{"config", config}, {"source", path}, {"rows", nlohmann::json::array()}};
  for (const auto& r : results) j["rows"].push_back(kb::CudaL1ResultJson(r));
  j["summary"] = kb::CudaL1Summary(results);
  std::printf("%s\n", j["summary"].dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  if (!common.out.empty()) {
    if (auto s = WriteJson(common.out, j); !s.ok()) return Fail(s);
  }
  common.Done(journal->get(), static_cast<int>(std::count_if(results.begin(), results.end(), [](const auto& r) {
                return r.status == "INFRA_ERROR";
              })));
  return 0;
}

}  // namespace

int BenchCommand(int argc, char** argv) {
  std::string tasks_dir, generations_dir, baseline_path, cuda_l1;
  CommonFlags common;
  OptionSet flags("crl bench",
                  "Evaluates KernelBench-format generations against their tasks and prints\n"
                  "a table per level (correct, fast_p, geomean and median speedup).\n"
                  "Generations are named level_L_problem_P_sample_S_kernel.py. With\n"
                  "--cuda-l1 FILE.jsonl, evaluates each row's custom_code against its\n"
                  "ref_code and reports our speedup beside the reported score_default.\n"
                  "Exit 0 when every sample was evaluated; 3 when some hit infrastructure\n"
                  "errors (they are listed, never counted as wrong).");
  flags.Add("tasks", &tasks_dir, "directory with level1/, level2/, ... task files");
  flags.Add("generations", &generations_dir, "directory of generated candidates");
  flags.Add("baseline", &baseline_path,
            "KernelBench baseline JSON (reference times recorded beside ours)");
  flags.Add("cuda-l1", &cuda_l1, "CUDA-L1 JSON lines file to evaluate instead");
  common.Bind(&flags);
  absl::Status s = flags.Parse(argc, argv, nullptr);
  if (s.ok() && !flags.help_requested() && cuda_l1.empty()) {
    if (tasks_dir.empty()) s = absl::InvalidArgumentError("--tasks is required");
    else if (generations_dir.empty()) s = absl::InvalidArgumentError("--generations is required");
  }
  if (!s.ok() || flags.help_requested()) return UsageError(flags, s);
  if (!cuda_l1.empty()) return CudaL1Bench(cuda_l1, common, flags);

  auto tasks = kb::ListTasks(tasks_dir);
  if (!tasks.ok()) return UsageError(flags, tasks.status());
  auto generations = kb::ListGenerations(generations_dir);
  if (!generations.ok()) return UsageError(flags, generations.status());
  std::optional<kb::Baseline> baseline;
  if (!baseline_path.empty()) {
    auto b = kb::ReadBaseline(baseline_path);
    if (!b.ok()) return UsageError(flags, b.status());
    baseline = std::move(*b);
  }
  std::map<std::pair<int, int>, const kb::TaskFile*> by_problem;
  for (const auto& t : *tasks) by_problem[{t.level, t.problem}] = &t;
  std::vector<std::pair<const kb::GenerationFile*, const kb::TaskFile*>> work;
  int orphans = 0;
  for (const auto& g : *generations) {
    auto it = by_problem.find({g.level, g.problem});
    if (it == by_problem.end()) {
      ++orphans;
      continue;
    }
    work.push_back({&g, it->second});
  }
  if (orphans) std::fprintf(stderr, "crl bench: %d generation(s) match no task; skipped\n", orphans);

  auto backend = Connect(common.endpoints, !common.no_time);
  if (!backend.ok()) return ConnectFailed(flags, backend.status());
  auto journal = common.OpenJournal();
  if (!journal.ok()) return UsageError(flags, journal.status());
  std::vector<BatchSample> samples(work.size());
  for (size_t i = 0; i < work.size(); ++i) {
    const auto& [g, t] = work[i];
    BatchSample& s = samples[i];
    s.name = absl::StrCat("level", g->level, "/", t->name, " sample ", g->sample);
    auto generation = ReadFileToString(g->path, "generation");
    auto task_source = ReadFileToString(t->path, "task");
    if (!generation.ok() || !task_source.ok()) {
      s.error = (generation.ok() ? task_source.status() : generation.status()).ToString();
      continue;
    }
    s.task = KernelBenchTaskMessage(fs::path(t->name).stem().string(), t->path, *task_source, backend->remote);
    s.source = std::move(*generation);
    s.filename = fs::path(g->path).filename().string();
    s.key = BenchJournal::Key(common.KeySettings(), *task_source, s.filename + "\n" + s.source);
  }
  std::vector<Outcome> outcomes = VerifyThenTime(*backend, common.timing, samples, common.jobs, journal->get());
  std::vector<kb::SampleResult> results(work.size());
  std::string device;
  for (size_t i = 0; i < work.size(); ++i) {
    const auto& [g, t] = work[i];
    const Outcome& o = outcomes[i];
    kb::SampleResult& r = results[i];
    r.level = g->level;
    r.problem = g->problem;
    r.sample = g->sample;
    r.evaluated = o.evaluated;
    r.verdict = o.evaluated ? VerdictShortName(o.verdict) : "INFRA_ERROR";
    r.compiled = o.compiled;
    r.compile_seconds = o.compile_seconds;
    r.compile_cache_hit = o.compile_cache_hit;
    r.correct = o.evaluated && o.verdict == v1::VERDICT_OK;
    r.custom_kernel = o.custom_kernel;
    r.flags = o.flags;
    r.message = o.message;
    r.max_abs_error = o.max_abs_error;
    r.max_rel_error = o.max_rel_error;
    if (o.timing) {
      r.ref_ms = o.timing->ref_seconds() * 1e3;
      r.candidate_ms = o.timing->candidate_seconds() * 1e3;
      r.speedup = o.timing->speedup();
      r.speedup_ci_low = o.timing->speedup_ci_low();
      r.speedup_ci_high = o.timing->speedup_ci_high();
      r.timing_mode = o.timing->timing_mode();
      r.graph_fallback = o.timing->graph_fallback();
      if (device.empty()) device = o.timing->device_name();
    }
    if (baseline) {
      if (const auto* b = kb::FindBaseline(*baseline, g->level, t->name); b && r.candidate_ms > 0) {
        absl::StrAppend(&r.message, r.message.empty() ? "" : "; ",
                        absl::StrFormat("baseline %.4g ms (%s): %.2fx against it", b->mean,
                                        b->hardware, b->mean / r.candidate_ms));
      }
    }
  }

  std::vector<kb::LevelSummary> summaries = kb::SummarizeLevels(*tasks, results);
  std::printf("%s", kb::RenderTable(summaries).c_str());
  int infra = 0;
  for (const auto& r : results) {
    if (kb::IsInfra(r)) {
      ++infra;
      std::fprintf(stderr, "infrastructure error: level %d problem %d sample %d: %s\n", r.level,
                   r.problem, r.sample, r.message.c_str());
    }
  }
  if (!common.out.empty()) {
    nlohmann::json config = common.Config(device);
    config["provenance"] = Provenance(device);
    config["tasks"] = tasks_dir;
    config["generations"] = generations_dir;
    if (auto w = WriteJson(common.out, kb::ResultsJson(config, results, summaries)); !w.ok()) {
      return Fail(w);
    }
  }
  common.Done(journal->get(), infra);
  return infra ? 3 : 0;
}

int BaselineCommand(int argc, char** argv) {
  std::string tasks_dir, hardware;
  int trials = 100, warmup = 10;
  CommonFlags common;
  OptionSet flags("crl baseline",
                  "Measures the reference Model of every task (KernelBench's baseline\n"
                  "schema: milliseconds, mean/std/min/max over --num_trials timed calls with\n"
                  "warm-up and cache flush, fresh inputs per call).");
  flags.Add("tasks", &tasks_dir, "directory with level1/, level2/, ... task files");
  flags.Add("num_trials", &trials, "timed calls per task");
  flags.Add("num_warmup", &warmup, "untimed calls first");
  flags.Add("hardware", &hardware, "hardware label (default: the device name)");
  common.Bind(&flags);
  absl::Status s = flags.Parse(argc, argv, nullptr);
  if (s.ok() && !flags.help_requested()) {
    if (tasks_dir.empty()) s = absl::InvalidArgumentError("--tasks is required");
    else if (common.out.empty()) s = absl::InvalidArgumentError("--out is required");
  }
  if (!s.ok() || flags.help_requested()) return UsageError(flags, s);
  auto tasks = kb::ListTasks(tasks_dir);
  if (!tasks.ok()) return UsageError(flags, tasks.status());
  auto backend = Connect(common.endpoints, false);
  if (!backend.ok()) return ConnectFailed(flags, backend.status());

  kb::Baseline baseline;
  int failures = 0;
  std::mutex mu;
  ProgressBar progress(std::cerr, static_cast<int>(tasks->size()), isatty(2));
  ParallelFor(static_cast<int>(tasks->size()), common.jobs, [&](int i) {
    const kb::TaskFile& t = (*tasks)[i];
    auto content = ReadFileToString(t.path, "task");
    std::string label;
    if (!content.ok()) {
      label = content.status().ToString();
    } else {
      v1::MeasureRequest m;
      *m.mutable_task() =
          KernelBenchTaskMessage(fs::path(t.name).stem().string(), t.path, *content, backend->remote);
      m.set_iterations(trials);
      m.set_warmup(warmup);
      auto r = backend->worker->Measure(m, RequestContext::Background());
      if (!r.ok() || r->verdict() != v1::VERDICT_OK) {
        label = r.ok() ? absl::StrCat(VerdictShortName(r->verdict()), ": ",
                                      r->messages_size() ? r->messages(0) : "")
                       : r.status().ToString();
      } else {
        std::vector<double> ms;
        for (const auto& sample : r->samples()) ms.push_back(sample.device_sync_seconds() * 1e3);
        kb::BaselineEntry e = kb::BaselineFromSamples(
            ms, hardware.empty() ? r->device_name() : hardware, r->device_name());
        std::lock_guard<std::mutex> lock(mu);
        baseline[kb::LevelKey(t.level)][t.name] = e;
        progress.Step(absl::StrFormat("level%d/%s %.4g ms", t.level, t.name, e.mean));
        return;
      }
    }
    std::lock_guard<std::mutex> lock(mu);
    ++failures;
    std::fprintf(stderr, "\nlevel%d/%s: %s\n", t.level, t.name.c_str(), label.c_str());
    progress.Step(absl::StrCat("level", t.level, "/", t.name, " failed"));
  });
  progress.Finish();
  if (auto w = WriteJson(common.out, kb::BaselineJson(baseline)); !w.ok()) return Fail(w);
  std::printf("%zu task(s) measured, %d failed; written to %s\n", tasks->size() - failures,
              failures, common.out.c_str());
  return failures ? 3 : 0;
}

}  // namespace crl::cli
