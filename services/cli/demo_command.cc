// crl demo: the main job on the embedded defaults. Until the contrastive-RL
// loop lands, it runs the built-in native suite end to end on an in-process
// worker: every shipped candidate is compiled and verified in the sandbox and
// its verdict checked against the one the suite expects, then the reference
// and the fast candidate of each task are timed.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/file.h"
#include "common/paths.h"
#include "lib/reward/names.h"
#include "lib/stats/stats.h"
#include "lib/task/backend.h"
#include "services/cli/commands.h"
#include "services/worker/worker_client.h"

namespace crl::cli {
namespace {

namespace fs = std::filesystem;

}  // namespace

int DemoCommand(int argc, char** argv) {
  std::string tasks_dir = FindShippedDir("tasks/native");
  std::string backend_name = "host";
  std::string only;
  int iterations = 30;
  LocalWorkerOptions worker;
  OptionSet flags("crl demo", "Runs the built-in native suite end to end on an in-process worker.");
  flags.Add("tasks", &tasks_dir, "suite directory (one task per subdirectory)");
  flags.Add("backend", &backend_name, "host or cuda");
  flags.Add("only", &only, "run only the task with this name");
  flags.Add("iterations", &iterations, "timed calls per side when timing");
  worker.Bind(&flags);
  absl::Status s = flags.Parse(argc, argv, nullptr);
  BackendKind backend;
  if (s.ok() && !ParseBackend(backend_name, &backend)) {
    s = absl::InvalidArgumentError("--backend must be host or cuda");
  }
  if (s.ok() && !flags.help_requested() && (tasks_dir.empty() || !fs::is_directory(tasks_dir))) {
    s = absl::NotFoundError(absl::StrCat("no task suite at '", tasks_dir, "' (use --tasks)"));
  }
  if (!s.ok() || flags.help_requested()) return UsageError(flags, s);
  if (backend == BackendKind::kCuda && worker.gpus().empty()) worker.set_gpus("auto");
  auto started = StartLocalWorker(worker);
  if (!started.ok()) return Fail(started.status());
  WorkerClientInterface& engine = **started;
  const RequestContext& context = RequestContext::Background();
  const v1::Backend proto_backend =
      backend == BackendKind::kCuda ? v1::BACKEND_CUDA : v1::BACKEND_HOST;
  const std::string ext = backend == BackendKind::kCuda ? ".cu" : ".cc";

  std::vector<fs::path> tasks;
  for (const auto& e : fs::directory_iterator(tasks_dir)) {
    if (fs::exists(e.path() / "task.yaml") && (only.empty() || e.path().filename() == only)) {
      tasks.push_back(e.path());
    }
  }
  std::sort(tasks.begin(), tasks.end());
  std::printf("crl demo: %zu tasks from %s, backend %s\n\n", tasks.size(), tasks_dir.c_str(),
              backend_name.c_str());
  std::printf("%-22s %-30s %-18s %-18s %8s\n", "task", "candidate", "expected", "verdict",
              "compile");
  int evaluated = 0, as_expected = 0, infra = 0, timing_failures = 0;
  std::vector<std::string> surprises;
  struct Timing { std::string task; double ref, cand; };
  std::vector<Timing> timings;

  for (const fs::path& dir : tasks) {
    YAML::Node expect;
    try {
      expect = YAML::LoadFile((dir / "candidates" / "expect.yaml").string());
    } catch (const YAML::Exception&) {
      continue;  // a task without shipped candidates
    }
    std::string fast_artifact;
    for (const auto& kv : expect) {
      const std::string file = kv.first.Scalar();
      if (fs::path(file).extension() != ext) continue;
      std::string expected = kv.second.IsMap() ? kv.second["verdict"].as<std::string>("")
                                               : kv.second.Scalar();
      v1::EvaluateRequest req;
      req.mutable_task()->set_path(dir.string());
      req.mutable_candidate()->set_source(
          ReadFileToString((dir / "candidates" / file).string(), "candidate").value_or(""));
      req.mutable_candidate()->set_filename(file);
      req.mutable_candidate()->set_backend(proto_backend);
      auto r = engine.Evaluate(req, context);
      ++evaluated;
      std::string got = r.ok() ? VerdictShortName(r->verdict()) : std::string(r.status().message());
      if (r.ok() && r->verdict() == v1::VERDICT_INFRA_ERROR) ++infra;
      bool ok = got == expected;
      as_expected += ok;
      std::printf("%-22s %-30s %-18s %-18s %7.2fs%s\n", dir.filename().c_str(), file.c_str(),
                  expected.c_str(), got.c_str(), r.ok() ? r->compile().compile_seconds() : 0.0,
                  ok ? "" : "  <-- unexpected");
      if (!ok) {
        std::string why = r.ok() && r->messages_size() ? r->messages(0) : got;
        surprises.push_back(absl::StrCat(dir.filename().string(), "/", file, ": ", why));
      }
      if (r.ok() && r->verdict() == v1::VERDICT_OK && file.rfind("fast_correct", 0) == 0) {
        fast_artifact = r->artifact_id();
      }
    }
    if (fast_artifact.empty() || iterations <= 0) continue;
    // Raw medians of the worker's Measure (not the timing oracle's protocol).
    auto measure = [&](const std::string& artifact) -> double {
      v1::MeasureRequest m;
      m.mutable_task()->set_path(dir.string());
      m.set_artifact_id(artifact);
      m.set_backend(proto_backend);
      m.set_iterations(iterations);
      m.set_warmup(3);
      auto r = engine.Measure(m, context);
      if (!r.ok() || r->verdict() != v1::VERDICT_OK) {
        // Said, not shown as a time of zero.
        ++timing_failures;
        surprises.push_back(absl::StrCat(dir.filename().string(), ": timing ",
                                         artifact.empty() ? "the reference" : "the fast candidate", " failed: ",
                                         r.ok() ? absl::StrCat(VerdictShortName(r->verdict()), " ",
                                                               r->messages_size() ? r->messages(0) : "")
                                                : std::string(r.status().message())));
        return 0;
      }
      std::vector<double> t;
      for (const auto& sample : r->samples()) t.push_back(sample.device_sync_seconds());
      return stats::Median(t);
    };
    timings.push_back({dir.filename().string(), measure(""), measure(fast_artifact)});
  }

  std::printf("\n%d/%d verdicts as expected", as_expected, evaluated);
  if (infra) std::printf(" (%d infrastructure errors)", infra);
  std::printf("\n");
  for (const auto& s : surprises) std::printf("  unexpected: %s\n", s.c_str());
  if (!timings.empty()) {
    std::printf("\nraw timing, median of %d calls (device-synchronized wall time):\n", iterations);
    std::printf("%-22s %12s %12s %8s\n", "task", "reference", "fast", "ratio");
    for (const auto& t : timings) {
      std::printf("%-22s %10.3fms %10.3fms %7.2fx\n", t.task.c_str(), t.ref * 1e3, t.cand * 1e3,
                  t.cand > 0 ? t.ref / t.cand : 0.0);
    }
  }
  return as_expected == evaluated && evaluated > 0 && timing_failures == 0 ? 0 : 1;
}

}  // namespace crl::cli
