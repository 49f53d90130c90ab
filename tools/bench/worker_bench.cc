// crl-bench-worker: latency and throughput of the in-process worker (the same
// EvalEngine `crl eval` and `crl demo` build), printed as plain numbers for
// docs/benchmarks.md.
//
//   1. compile latency, cold: every task's fast_correct and slow_correct source,
//      each made unique by a comment (a cache miss even in a warm cache);
//   2. compile latency, cached: the same sources again (cache hits);
//   3. worker overhead per evaluation: wall time of Evaluate on a compiled
//      candidate minus the candidate's and reference's own call times
//      (estimated with Measure at every size set the trials use), on a tiny
//      generated task (y = x + 1 over 1024 floats: wall ~ overhead) and on a
//      real task of the suite;
//   4. sustained evaluations per minute with a warm cache: K client threads
//      evaluating every shipped candidate round robin for a fixed time.
//
//   crl-bench-worker [--backend host|cuda] [--repeats N] [--concurrency K]
//                    [--seconds S] [--json] [worker options]

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/file.h"
#include "common/logging.h"
#include "common/options.h"
#include "common/paths.h"
#include "lib/task/native_task.h"
#include "services/worker/worker_setup.h"
#include "tools/bench/worker_bench_files.h"

namespace crl {
namespace {

using namespace bench_worker;  // NOLINT: the benchmark's own helpers
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

double Since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// ---- 3. overhead per evaluation --------------------------------------------

struct Overhead {
  std::string label;
  int trials = 0;
  int candidate_calls = 0;
  int reference_calls = 0;
  std::vector<double> wall;  // seconds per Evaluate
  // Where each Evaluate's wall went (EvaluateResponse): waiting for a lane,
  // starting the sides, the trials, and the rest (the worker's own work
  // before and after).
  std::vector<double> lane_wait_s, start_s, trials_s, rest_s;
  // Evaluations whose reference answers came from the reference cache
  // (their reference calls did not run).
  std::vector<bool> reference_cached;
  // Estimated seconds of the candidate's and the reference's calls.
  double candidate_p50 = 0, candidate_p95 = 0;
  double reference_p50 = 0, reference_p95 = 0;
  // The kernel time inside evaluation i.
  double KernelP50(size_t i) const { return candidate_p50 + (reference_cached[i] ? 0 : reference_p50); }
};

double MedianOf(const google::protobuf::RepeatedPtrField<v1::TimingSample>& samples, double q) {
  std::vector<double> v;
  for (const auto& s : samples) v.push_back(s.host_seconds());
  std::sort(v.begin(), v.end());
  return Quantile(v, q);
}

absl::StatusOr<Overhead> MeasureOverhead(EvalEngine& engine, const std::string& label,
                                         const fs::path& task_dir, const std::string& source,
                                         const std::string& filename, v1::Backend backend,
                                         int evaluations, int determinism_reruns,
                                         const fs::path& scratch, absl::Duration gap) {
  Overhead o;
  o.label = label;
  v1::EvaluateRequest req;
  req.mutable_task()->set_path(task_dir.string());
  req.mutable_candidate()->set_source(source);
  req.mutable_candidate()->set_filename(filename);
  req.mutable_candidate()->set_backend(backend);
  // The first evaluation compiles the candidate and the reference (not timed).
  for (int i = 0; i <= evaluations; ++i) {
    // A pause first (not timed) lets the lane's warm pool refill: the
    // overhead of an evaluation on a warm lane, rather than of one in a
    // burst that outruns the pool.
    if (i > 0 && gap > absl::ZeroDuration()) absl::SleepFor(gap);
    auto start = Clock::now();
    auto r = engine.Evaluate(req, RequestContext::Background());
    double wall = Since(start);
    if (!r.ok()) return r.status();
    if (r->verdict() != v1::VERDICT_OK) {
      return absl::InternalError(absl::StrCat(label, ": verdict ", Short(r->verdict()), ": ",
                                              r->messages_size() ? r->messages(0) : ""));
    }
    if (i == 0) {
      o.trials = r->correctness().trials();
      continue;
    }
    if (!r->compile().cache_hit()) return absl::InternalError(label + ": compile cache miss");
    o.wall.push_back(wall);
    o.lane_wait_s.push_back(r->lane_wait_seconds());
    o.start_s.push_back(r->start_seconds());
    o.trials_s.push_back(r->trials_seconds());
    o.rest_s.push_back(wall - r->lane_wait_seconds() - r->start_seconds() - r->trials_seconds());
    o.reference_cached.push_back(r->reference_cached());
  }

  // The calls one Evaluate makes: trial t runs at size set t*S/T (verifier.cc),
  // once per side; the determinism re-runs repeat trial 0 on the candidate.
  v1::CompileRequest creq;
  *creq.mutable_task() = req.task();
  *creq.mutable_candidate() = req.candidate();
  auto compiled = engine.Compile(creq, RequestContext::Background());
  if (!compiled.ok()) return compiled.status();
  auto task = LoadNativeTask(req.task().path());
  if (!task.ok()) return task.status();
  const std::vector<SizeSet> sets = task->AllSizeSets();
  std::vector<int> per_set(sets.size(), 0);
  for (int t = 0; t < o.trials; ++t) ++per_set[t * sets.size() / o.trials];
  o.reference_calls = o.trials;
  o.candidate_calls = o.trials + determinism_reruns;
  for (size_t s = 0; s < sets.size(); ++s) {
    if (per_set[s] == 0) continue;
    fs::path dir = task_dir;
    if (s > 0) {
      auto variant = SizeVariant(*task, sets[s], scratch / absl::StrCat(label, "-set", s));
      if (!variant.ok()) return variant.status();
      dir = *variant;
    }
    const int cand_calls = per_set[s] + (s == 0 ? determinism_reruns : 0);
    for (int side = 0; side < 2; ++side) {
      const int calls = side == 0 ? per_set[s] : cand_calls;
      v1::MeasureRequest m;
      m.mutable_task()->set_path(dir.string());
      if (side == 1) m.set_artifact_id(compiled->artifact_id());
      m.set_backend(backend);
      m.set_iterations(std::max(10, calls));
      m.set_warmup(1);
      m.set_no_l2_flush(true);  // the verifier does not flush between calls
      auto r = engine.Measure(m, RequestContext::Background());
      if (!r.ok()) return r.status();
      if (r->verdict() != v1::VERDICT_OK) {
        return absl::InternalError(absl::StrCat(label, ": measure ", Short(r->verdict())));
      }
      (side == 0 ? o.reference_p50 : o.candidate_p50) += calls * MedianOf(r->samples(), 0.5);
      (side == 0 ? o.reference_p95 : o.candidate_p95) += calls * MedianOf(r->samples(), 0.95);
    }
  }
  return o;
}

json ReportOverhead(const Overhead& o) {
  std::printf("evaluation overhead, %s: %d trials (candidate %d calls, reference %d calls)\n",
              o.label.c_str(), o.trials, o.candidate_calls, o.reference_calls);
  Stats wall = Summarize(o.wall, 1e3);
  std::vector<double> overhead;
  int cached = 0;
  for (size_t i = 0; i < o.wall.size(); ++i) {
    overhead.push_back(o.wall[i] - o.KernelP50(i));
    cached += o.reference_cached[i];
  }
  Stats over = Summarize(overhead, 1e3);
  PrintStats("wall per evaluation (ms)", wall);
  std::printf("  %-26s candidate p50 %9.3f  p95 %9.3f, reference p50 %9.3f  p95 %9.3f   (sum of per-call "
              "medians / p95s, Measure)\n",
              "kernel time inside (ms)", o.candidate_p50 * 1e3, o.candidate_p95 * 1e3, o.reference_p50 * 1e3,
              o.reference_p95 * 1e3);
  std::printf("  %-26s %d of %zu (their reference calls did not run)\n", "reference cached", cached,
              o.wall.size());
  PrintStats("overhead (ms)", over);
  const Stats lane_wait = Summarize(o.lane_wait_s, 1e3), start = Summarize(o.start_s, 1e3),
              trials = Summarize(o.trials_s, 1e3), rest = Summarize(o.rest_s, 1e3);
  std::printf("  %-26s waiting for a lane %.1f, starting sides %.1f, trials %.1f, the rest %.1f\n",
              "wall by phase, p50 (ms)", lane_wait.p50, start.p50, trials.p50, rest.p50);
  return {{"task", o.label},
          {"trials", o.trials},
          {"candidate_calls", o.candidate_calls},
          {"reference_calls", o.reference_calls},
          {"wall_ms", ToJson(wall)},
          {"kernel_ms",
           {{"candidate_p50", o.candidate_p50 * 1e3},
            {"candidate_p95", o.candidate_p95 * 1e3},
            {"reference_p50", o.reference_p50 * 1e3},
            {"reference_p95", o.reference_p95 * 1e3}}},
          {"reference_cached", cached},
          {"overhead_ms", ToJson(over)},
          {"phases_ms",
           {{"lane_wait", ToJson(lane_wait)}, {"start", ToJson(start)}, {"trials", ToJson(trials)},
            {"rest", ToJson(rest)}}}};
}

}  // namespace

int BenchMain(int argc, char** argv) {
  std::string tasks_dir = FindShippedDir("tasks/native");
  std::string backend_name = "host";
  std::string overhead_task = "layernorm_rows";
  std::vector<std::string> phases = {"compile", "overhead", "sustained"};
  int repeats = 1, concurrency = 2, evaluations = 20;
  double seconds = 30, gap_ms = 0;
  bool json_out = false, with_timeouts = false;
  std::string log_level = "info";
  WorkerOptions worker;
  worker.compiler.cache_dir = "";  // default: a fresh temporary directory
  OptionSet flags("crl-bench-worker",
                  "Benchmarks the in-process worker: compile latency (cold and cached), the\n"
                  "overhead of one evaluation beyond kernel time, and sustained evaluations\n"
                  "per minute with a warm cache.");
  flags.Add("backend", &backend_name, "host or cuda");
  flags.Add("tasks", &tasks_dir, "suite directory (one task per subdirectory)");
  flags.Add("repeats", &repeats, "cold and cached compiles of each source");
  flags.Add("evaluations", &evaluations, "timed evaluations per task in the overhead phase");
  flags.Add("overhead_gap_ms", &gap_ms,
            "overhead phase: an untimed pause before each evaluation, so the warm pool refills (0: back to back)");
  flags.Add("overhead_task", &overhead_task,
            "real task of the suite for the overhead phase (its fast_correct candidate)");
  flags.Add("concurrency", &concurrency, "client threads in the sustained phase");
  flags.Add("seconds", &seconds, "wall seconds of the sustained phase");
  flags.Add("with_timeouts", &with_timeouts,
            "sustained phase: include candidates expected to TIMEOUT (each holds a lane for "
            "the call timeout)");
  flags.Add("phases", &phases, "which of compile, overhead, sustained to run");
  flags.Add("json", &json_out, "also print one JSON line with every number");
  flags.Add("log_level", &log_level, "debug (each runner request's round trip), info, warning or error");
  BindWorkerOptions(&flags, &worker);
  absl::Status s = flags.Parse(argc, argv, nullptr);
  if (LogLevel level; s.ok()) {
    if (ParseLogLevel(log_level, &level)) {
      SetMinLogLevel(level);
    } else {
      s = absl::InvalidArgumentError(absl::StrCat("--log_level: unknown level '", log_level, "'"));
    }
  }
  BackendKind backend = BackendKind::kHost;
  if (s.ok() && !ParseBackend(backend_name, &backend)) {
    s = absl::InvalidArgumentError("--backend must be host or cuda");
  }
  if (s.ok() && (tasks_dir.empty() || !fs::is_directory(tasks_dir))) {
    s = absl::NotFoundError(absl::StrCat("no task suite at '", tasks_dir, "' (use --tasks)"));
  }
  if (s.ok() && (repeats < 1 || concurrency < 1 || evaluations < 1 || seconds <= 0)) {
    s = absl::InvalidArgumentError("--repeats, --evaluations, --concurrency, --seconds must be > 0");
  }
  if (!s.ok() || flags.help_requested()) {
    if (!s.ok()) std::fprintf(stderr, "error: %s\n\n", std::string(s.message()).c_str());
    std::fputs(flags.Usage().c_str(), s.ok() ? stdout : stderr);
    return s.ok() ? 0 : 2;
  }
  auto phase = [&](const std::string& name) {
    return std::find(phases.begin(), phases.end(), name) != phases.end();
  };
  if (backend == BackendKind::kCuda && worker.gpus.empty()) worker.gpus = "auto";

  std::vector<std::string> cleanup;
  if (worker.compiler.cache_dir.empty()) {
    worker.compiler.cache_dir = MakeTempDir("crl-bench-cache-");
    cleanup.push_back(worker.compiler.cache_dir);
  }
  const std::string scratch = MakeTempDir("crl-bench-tasks-");
  cleanup.push_back(scratch);
  if (worker.compiler.cache_dir.empty() || scratch.empty()) {
    std::fprintf(stderr, "error: cannot create a temporary directory\n");
    return 3;
  }
  const int reruns = worker.engine.verify.determinism_reruns;
  auto rt = BuildWorker(worker, nullptr);
  if (!rt.ok()) {
    std::fprintf(stderr, "error: %s\n", rt.status().ToString().c_str());
    return 3;
  }
  EvalEngine& engine = *(*rt)->engine;
  const v1::Backend proto_backend =
      backend == BackendKind::kCuda ? v1::BACKEND_CUDA : v1::BACKEND_HOST;
  const std::string ext = backend == BackendKind::kCuda ? ".cu" : ".cc";
  const std::vector<fs::path> tasks = ListTasks(tasks_dir);
  const unsigned cores = std::thread::hardware_concurrency();
  std::printf("crl-bench-worker: backend %s, %zu tasks from %s, %u cores, host_lanes %d, "
              "compile_slots %d, cache %s\n\n",
              backend_name.c_str(), tasks.size(), tasks_dir.c_str(), cores, worker.host_lanes,
              worker.engine.compile_slots, worker.compiler.cache_dir.c_str());
  std::fflush(stdout);
  json report = {{"backend", backend_name}, {"tasks", tasks.size()}, {"cores", cores},
                 {"host_lanes", worker.host_lanes}};
  int failures = 0;

  // ---- 1 and 2: compile latency, cold then cached ----
  if (phase("compile")) {
    std::mt19937_64 rng(std::random_device{}());
    const std::string nonce = absl::StrCat(rng());
    std::vector<v1::CompileRequest> requests;
    for (int rep = 0; rep < repeats; ++rep) {
      for (const fs::path& task : tasks) {
        for (const char* name : {"fast_correct", "slow_correct"}) {
          fs::path file = task / "candidates" / (std::string(name) + ext);
          if (!fs::exists(file)) continue;
          v1::CompileRequest r;
          r.mutable_task()->set_path(task.string());
          // A unique comment: a new cache key, so this compile is a miss.
          r.mutable_candidate()->set_source(
              absl::StrCat(ReadFile(file), "\n// crl-bench-worker ", nonce, " ", rep, "\n"));
          r.mutable_candidate()->set_filename(file.filename().string());
          r.mutable_candidate()->set_backend(proto_backend);
          requests.push_back(std::move(r));
        }
      }
    }
    json compile_json;
    for (int pass = 0; pass < 2; ++pass) {
      const bool cold = pass == 0;
      std::vector<double> wall;
      int hits = 0, not_ok = 0;
      for (const auto& r : requests) {
        auto start = Clock::now();
        auto c = engine.Compile(r, RequestContext::Background());
        double t = Since(start);
        if (!c.ok() || c->verdict() != v1::VERDICT_OK) {
          ++not_ok;
          std::fprintf(stderr, "compile %s/%s: %s\n", r.task().path().c_str(),
                       r.candidate().filename().c_str(),
                       c.ok() ? Short(c->verdict()).c_str() : c.status().ToString().c_str());
          continue;
        }
        hits += c->cache_hit();
        wall.push_back(t);
      }
      Stats st = Summarize(wall, cold ? 1 : 1e3);
      std::printf("compile latency, %s: %zu sources (fast_correct+slow_correct%s), "
                  "%d cache hits, %d failed\n",
                  cold ? "cold" : "cached", requests.size(), ext.c_str(), hits, not_ok);
      PrintStats(cold ? "compile (s)" : "compile (ms)", st);
      std::fflush(stdout);
      compile_json[cold ? "cold_s" : "cached_ms"] = ToJson(st);
      compile_json[cold ? "cold_hits" : "cached_hits"] = hits;
      failures += not_ok + (cold ? hits : static_cast<int>(wall.size()) - hits);
    }
    report["compile"] = compile_json;
    std::printf("\n");
  }

  // ---- 3: worker overhead per evaluation ----
  if (phase("overhead")) {
    json overhead_json;
    const fs::path tiny = fs::path(scratch) / "bench_add_one";
    bool wrote = WriteTinyTask(tiny);
    const std::string tiny_candidate =
        std::string("// candidate: the reference's loop\n") + TinySource(backend == BackendKind::kCuda);
    struct Case {
      std::string key, label;
      fs::path dir;
      std::string source, filename;
    };
    std::vector<Case> cases;
    if (wrote) {
      cases.push_back({"tiny", "bench_add_one (N=1024)", tiny, tiny_candidate, "candidate" + ext});
    } else {
      std::fprintf(stderr, "error: cannot write the tiny task under %s\n", scratch.c_str());
      ++failures;
    }
    const fs::path real = fs::path(tasks_dir) / overhead_task;
    const fs::path real_file = real / "candidates" / ("fast_correct" + ext);
    if (fs::exists(real_file)) {
      cases.push_back({"real", overhead_task + "/fast_correct" + ext, real, ReadFile(real_file),
                       real_file.filename().string()});
    } else {
      std::fprintf(stderr, "error: no %s\n", real_file.string().c_str());
      ++failures;
    }
    for (const Case& c : cases) {
      auto o = MeasureOverhead(engine, c.key == "tiny" ? "bench_add_one" : overhead_task, c.dir,
                               c.source, c.filename, proto_backend, evaluations, reruns,
                               fs::path(scratch), absl::Milliseconds(gap_ms));
      if (!o.ok()) {
        std::fprintf(stderr, "overhead %s: %s\n", c.label.c_str(), o.status().ToString().c_str());
        ++failures;
        continue;
      }
      o->label = c.label;
      overhead_json[c.key] = ReportOverhead(*o);
      std::fflush(stdout);
    }
    report["overhead"] = overhead_json;
    if (const NativeWarmPool* pool = (*rt)->native_warm.get()) {
      const auto st = pool->stats();
      std::printf("native warm pool: %llu sides taken warm, %llu started cold (lanes filled in the background between "
                  "evaluations)\n",
                  static_cast<unsigned long long>(st.warm), static_cast<unsigned long long>(st.cold));
    }
    std::printf("\n");
  }

  // ---- 4: sustained evaluations per minute, warm cache ----
  if (phase("sustained")) {
    std::vector<Candidate> all;
    int skipped = 0;
    for (const fs::path& task : tasks) {
      for (Candidate& c : ShippedCandidates(task, ext)) {
        if (c.expected == "TIMEOUT" && !with_timeouts) {
          ++skipped;
          continue;
        }
        all.push_back(std::move(c));
      }
    }
    std::mutex mu;
    std::map<std::string, int> mix;
    std::vector<double> latency;
    int unexpected = 0, misses = 0;
    // Runs Evaluate over `all` round robin from `threads` clients until every
    // candidate ran once (deadline unset) or the deadline passed.
    auto run = [&](int threads, bool until_deadline, Clock::time_point deadline) {
      std::atomic<size_t> next{0};
      std::vector<std::thread> pool;
      for (int k = 0; k < threads; ++k) {
        pool.emplace_back([&] {
          for (;;) {
            size_t i = next++;
            if (until_deadline ? Clock::now() >= deadline : i >= all.size()) return;
            const Candidate& c = all[i % all.size()];
            v1::EvaluateRequest req;
            req.mutable_task()->set_path(c.task.string());
            req.mutable_candidate()->set_source(c.source);
            req.mutable_candidate()->set_filename(c.file);
            req.mutable_candidate()->set_backend(proto_backend);
            auto start = Clock::now();
            auto r = engine.Evaluate(req, RequestContext::Background());
            double t = Since(start);
            std::string verdict = r.ok() ? Short(r->verdict()) : "ERROR";
            std::lock_guard<std::mutex> lock(mu);
            if (verdict != c.expected) {
              ++unexpected;
              std::fprintf(stderr, "%s/%s: expected %s, got %s %s\n", c.task.filename().c_str(),
                           c.file.c_str(), c.expected.c_str(), verdict.c_str(),
                           r.ok() ? "" : r.status().ToString().c_str());
            }
            if (!until_deadline) continue;
            ++mix[verdict];
            latency.push_back(t);
            if (r.ok() && r->compile().artifact_id().size() && !r->compile().cache_hit()) ++misses;
          }
        });
      }
      for (auto& t : pool) t.join();
    };
    auto warm_start = Clock::now();
    run(concurrency, false, {});
    const double warm_seconds = Since(warm_start);
    const int warm_unexpected = unexpected;
    unexpected = 0;
    auto start = Clock::now();
    run(concurrency, true,
        start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds)));
    const double elapsed = Since(start);
    const double per_minute = static_cast<double>(latency.size()) / elapsed * 60;
    std::printf("sustained evaluations, warm cache: %zu candidates (%d TIMEOUT ones left out), "
                "%d clients, host_lanes %d\n",
                all.size(), skipped, concurrency, worker.host_lanes);
    std::printf("  warm-up pass (compiles every candidate and reference): %.1f s, "
                "%d unexpected verdicts\n",
                warm_seconds, warm_unexpected);
    std::printf("  %-26s %.1f  (%zu evaluations in %.1f s, %d compile-cache misses, %d unexpected "
                "verdicts)\n",
                "evaluations per minute", per_minute, latency.size(), elapsed, misses, unexpected);
    PrintStats("latency per evaluation (ms)", Summarize(latency, 1e3));
    std::vector<std::string> parts;
    for (const auto& [v, n] : mix) parts.push_back(absl::StrCat(v, " ", n));
    std::printf("  %-26s %s\n", "verdict mix", absl::StrJoin(parts, ", ").c_str());
    report["sustained"] = {{"candidates", all.size()},
                           {"timeouts_left_out", skipped},
                           {"concurrency", concurrency},
                           {"seconds", elapsed},
                           {"evaluations", latency.size()},
                           {"evaluations_per_minute", per_minute},
                           {"warmup_seconds", warm_seconds},
                           {"cache_misses", misses},
                           {"unexpected", unexpected + warm_unexpected},
                           {"latency_ms", ToJson(Summarize(latency, 1e3))},
                           {"verdicts", mix}};
    failures += unexpected + warm_unexpected;
  }

  rt->reset();
  for (const auto& dir : cleanup) {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  if (json_out) std::printf("%s\n", report.dump().c_str());
  return failures ? 1 : 0;
}

}  // namespace crl

int main(int argc, char** argv) { return crl::BenchMain(argc, argv); }
