#include "services/worker/worker_setup.h"

#include <csignal>

#include <filesystem>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/file.h"
#include "common/logging.h"
#include "common/memory.h"
#include "common/paths.h"
#include "common/status.h"
#include "services/worker/formats/kernelbench/kb_format.h"
#include "services/worker/formats/native/native_format.h"
#include "services/worker/verify/reference_cache.h"

namespace crl {
namespace fs = std::filesystem;

void BindWorkerOptions(OptionSet* set, WorkerOptions* o) {
  set->Add("host_lanes", &o->host_lanes, "CPU slots that run host-backend candidates (0: none)");
  set->Add("gpus", &o->gpus, "GPUs to serve: auto, none (empty) or a list like 0,1");
  set->Add("compile_slots", &o->engine.compile_slots, "concurrent compiles (0: one per core)");
  set->Add("task_root", &o->task_root,
           "directory task paths resolve against and may not leave (empty: any path)");
  set->Add("work_dir", &o->work_dir, "where inline task bundles are unpacked");
  set->Add("cache_dir", &o->compiler.cache_dir, "content-addressed build cache");
  set->Add("cache_max_bytes", &o->cache_max_bytes,
           "build cache budget in bytes; least recently used objects are evicted (0: unbounded)");
  set->Add("work_max_bytes", &o->work_max_bytes,
           "budget of unpacked task bundles under work_dir (0: unbounded)");
  set->Add("include_dir", &o->compiler.include_dir,
           "directory with crl/kernel.h (default: this installation's)");
  set->Add("runner_path", &o->runner.runner_path,
           "the crl-runner binary (default: next to this executable)");
  set->Add("cuda_arch", &o->compiler.cuda_arch, "nvcc target architecture");
  set->Add("python", &o->compiler.python,
           "interpreter with torch for KernelBench-format tasks (builds and runs)");
  set->Add("kb_harness", &o->compiler.kb_harness,
           "the KernelBench harness script (default: this installation's)");
  set->Add("kb_pch", &o->compiler.kb_pch,
           "precompile torch/extension.h once per build cache (faster load_inline builds)");
  set->Add("kb_split_cuda", &o->compiler.kb_split_cuda,
           "build load_inline CUDA sources split into a host part (g++, precompiled header) "
           "and a device part (nvcc without torch's headers) where they can be");
  set->Add("kb_atol", &o->kb.atol, "KernelBench float32 absolute tolerance");
  set->Add("kb_rtol", &o->kb.rtol, "KernelBench float32 relative tolerance");
  set->Add("kb_probe_degenerate", &o->kb.probe_degenerate,
           "probe each KernelBench task with trivial solutions (zeros, memorised, identity, mean)");
  set->Add("nvcc", &o->compiler.nvcc, "path of nvcc");
  set->Add("gxx", &o->compiler.gxx, "path of g++");
  set->Add("cuda_flags", &o->compiler.cuda_flags,
           "nvcc flags of native CUDA candidates and references (part of the build cache key)");
  set->Add("compile_timeout_seconds", &o->compiler.timeout_seconds, "wall limit of one compile");
  set->Add("trials", &o->engine.verify.trials, "correctness trials per evaluation (at least)");
  set->Add("determinism_reruns", &o->engine.verify.determinism_reruns,
           "re-runs of the first trial that must reproduce its output bit for bit");
  set->Add("call_timeout_seconds", &o->engine.verify.call_timeout_seconds,
           "wall limit of one candidate call");
  set->Add("verify_slots_per_gpu", &o->verify_slots_per_gpu,
           "verifications at once on one GPU (timing always has the GPU to itself; a failure that sharing could "
           "cause is re-verified alone)");
  set->Add("timing_batch", &o->timing_batch,
           "measurements that wait for a GPU before they hold back verifications and have the GPU emptied for "
           "them (a timing window: all that wait then run in turn); 1: each at once");
  set->Add("timing_delay_seconds", &o->timing_delay_seconds,
           "the longest a measurement waits for timing_batch others before it opens a timing window alone");
  set->Add("step_aside_for_timing", &o->engine.step_aside_for_timing,
           "a GPU verification lets go of its lane between two trials while timing waits, its sides frozen "
           "(SIGSTOP) until it has the lane back, and verified sides kept for their measurement wait frozen, "
           "off the lane (false: timing waits for every verification on the lane to end)");
  set->Add("ready_ahead_per_lane", &o->engine.ready_ahead_per_lane,
           "verifications per lane that may ready their sides' processes (KernelBench on a GPU: started, torch "
           "imported, or taken from the warm pool) before they hold a lane, so that a start's import holds no "
           "verification slot; those beyond it start their sides under the lease (0: never)");
  set->Add("reused_output_as_flag", &o->engine.verify.reused_output_as_flag,
           "a candidate returning the buffer its previous call returned gets FLAG_WRITE_AFTER_RETURN instead "
           "of WRONG_ANSWER");
  set->Add("reference_cache_bytes", &o->reference_cache_bytes,
           "bytes of reference outputs kept in memory, so that later verifications of a task run only the "
           "candidate (-1: an eighth of the memory this worker may use, at least 1 GiB; 0: off, the reference "
           "then runs beside every candidate)");
  set->Add("reference_cache_max_uses", &o->engine.reference_cache.max_uses,
           "verifications one task's recorded reference answers serve before its secret seeds are drawn afresh");
  set->Add("pin_gpu_timing", &o->engine.pin_gpu_timing,
           "run both sides of a GPU measurement on one CPU (launch-bound calls are as fast as their core)");
  set->Add("kb_warm_per_gpu", &o->warm.per_gpu,
           "KernelBench harness processes kept started and warmed per GPU (torch imported, CUDA context up); "
           "each serves one side and is never reused (0: start each side cold)");
  set->Add("kb_warm_per_host_lane", &o->warm.per_host_lane,
           "the same per host lane (warming takes the lane's CPU, so it waits for the lane to be free)");
  set->Add("native_warm_per_gpu", &o->native_warm.per_gpu,
           "crl-runner processes kept started per GPU for native tasks (CUDA context and flush buffer up, no "
           "library); each serves one side and is never reused (0: start each side cold)");
  set->Add("native_warm_per_host_lane", &o->native_warm.per_host_lane,
           "the same per host lane (a start takes the lane's CPU, so it waits for the lane to be free)");
  set->Add("host_memory_bytes", &o->runner.host_memory_bytes,
           "address-space limit of host runners");
  set->Add("sandbox", &o->runner.isolate,
           "run compilers and runners in namespaces (disable only to debug)");
  set->Add("hidden_paths", &o->runner.hidden_paths,
           "host paths hidden from compilers and runners (tokens, keys)");
}

void ResolveDefaultPaths(WorkerOptions* o) {
  if (o->runner.runner_path.empty()) {
    o->runner.runner_path = (fs::path(ExecutableDir()) / "crl-runner").string();
  }
  // Sandboxes bind these by absolute path.
  o->compiler.cache_dir = fs::absolute(o->compiler.cache_dir).string();
  o->work_dir = fs::absolute(o->work_dir).string();
  if (o->compiler.include_dir.empty()) o->compiler.include_dir = FindShippedDir("include");
  if (o->compiler.kb_harness.empty()) {
    std::string dir = FindShippedDir("runner/python");
    if (!dir.empty()) o->compiler.kb_harness = dir + "/crl_kb_harness.py";
  }
  o->kb.python = o->compiler.python;
  o->kb.harness = o->compiler.kb_harness;
  o->compiler.isolate = o->runner.isolate;
  o->compiler.hidden_paths = o->runner.hidden_paths;
}

WorkerRuntime::~WorkerRuntime() {
  if (lanes) CRL_LOG(INFO) << "lanes: " << lanes->Waits().Describe();
  if (kb_warm) {
    const auto s = kb_warm->stats();
    CRL_LOG(INFO) << "kernelbench warm pool: " << s.warm << " side(s) started from the pool (" << s.prepared
                  << " of them with their device still to bring up), " << s.cold << " cold; " << s.started
                  << " brought up, " << s.failed << " failed, " << s.dropped << " dropped";
  }
  if (engine) {
    const auto c = engine->ReferenceCacheStats();
    if (c.hits + c.misses > 0) {
      CRL_LOG(INFO) << "reference cache: " << c.hits << " hit(s), " << c.misses << " miss(es); " << c.inserted
                    << " record(s) kept, " << c.too_large << " too large to keep, " << c.evicted
                    << " evicted for room, " << c.retired << " retired; " << c.entries << " held now ("
                    << c.bytes / (1 << 20) << " MiB)";
    }
  }
}

absl::StatusOr<std::unique_ptr<WorkerRuntime>> BuildWorker(WorkerOptions o,
                                                           prometheus::Registry* registry,
                                                           ClockInterface* clock) {
  ResolveDefaultPaths(&o);
  if (!fs::exists(o.runner.runner_path)) {
    return absl::FailedPreconditionError(
        absl::StrCat("runner_path: no crl-runner at ", o.runner.runner_path));
  }
  if (o.reference_cache_bytes < -1) {
    return absl::InvalidArgumentError("reference_cache_bytes: must be -1 (sized to memory), 0 (off) or more");
  }
  if (o.reference_cache_bytes == -1) {
    const int64_t usable = UsableMemoryBytes();
    o.engine.reference_cache.max_bytes = ReferenceCacheBytesFor(usable);
    CRL_LOG(INFO) << "reference cache: up to " << (o.engine.reference_cache.max_bytes >> 20) << " MiB ("
                  << (usable > 0 ? absl::StrCat("an eighth of the ", usable >> 20, " MiB this worker may use")
                                 : std::string("its memory unknown"))
                  << "; --reference_cache_bytes sets it)";
  } else {
    o.engine.reference_cache.max_bytes = o.reference_cache_bytes;
  }
  if (o.engine.reference_cache.max_uses < 1) {
    return absl::InvalidArgumentError("reference_cache_max_uses: must be at least 1");
  }
  if (o.timing_batch < 1) return absl::InvalidArgumentError("timing_batch: must be at least 1");
  if (o.engine.ready_ahead_per_lane < 0) {
    return absl::InvalidArgumentError("ready_ahead_per_lane: must be 0 or more");
  }
  if (o.timing_delay_seconds < 0) {
    return absl::InvalidArgumentError("timing_delay_seconds: must be 0 or more");
  }
  auto rt = std::make_unique<WorkerRuntime>();
  rt->cache_budget = std::make_unique<DiskBudget>(std::vector<std::string>{o.compiler.cache_dir + "/objects"},
                                                  DiskBudgetOptions{o.cache_max_bytes}, clock);
  rt->work_budget = std::make_unique<DiskBudget>(
      std::vector<std::string>{o.work_dir + "/tasks", o.work_dir + "/kb-tasks"}, DiskBudgetOptions{o.work_max_bytes},
      clock);
  o.compiler.budget = rt->cache_budget.get();
  CRL_ASSIGN_OR_RETURN(rt->compiler, SandboxedCompiler::Create(o.compiler));
  rt->work_budget->Scan();

  // Runner and harness processes can die at any moment; writing to a dead
  // one's pipe must be an error return, not a signal that ends this process
  // (runner/sandbox.h). crl-worker's server ignores it too; in-process
  // workers (crl bench, tests) need it as much.
  signal(SIGPIPE, SIG_IGN);
  std::vector<Lane> lanes;
  for (int i = 0; i < o.host_lanes; ++i) {
    lanes.push_back({BackendKind::kHost, i, absl::StrCat("host:", i)});
  }
  std::vector<int> gpus;
  if (o.gpus == "auto") {
    if (!rt->compiler->Toolchain(BackendKind::kCuda).empty()) {
      // A pod may hold GPU 3 alone (/dev/nvidia3): look at every node.
      for (int i = 0; i < 256; ++i) {
        if (fs::exists(absl::StrCat("/dev/nvidia", i))) gpus.push_back(i);
      }
    }
  } else {
    for (absl::string_view part : absl::StrSplit(o.gpus, ',', absl::SkipEmpty())) {
      int g;
      if (!absl::SimpleAtoi(part, &g) || g < 0) {
        return absl::InvalidArgumentError(absl::StrCat("gpus: bad GPU index '", part, "'"));
      }
      gpus.push_back(g);
    }
    if (!gpus.empty() && rt->compiler->Toolchain(BackendKind::kCuda).empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("gpus: GPUs requested but nvcc not found at ", o.compiler.nvcc));
    }
  }
  for (int g : gpus) lanes.push_back({BackendKind::kCuda, g, absl::StrCat("cuda:", g)});
  if (lanes.empty()) {
    return absl::FailedPreconditionError("no lanes: set --host_lanes >= 1 or serve a GPU");
  }
  if (registry) rt->metrics = std::make_unique<WorkerMetrics>(registry);
  LanePoolOptions lane_options;
  lane_options.verify_slots_per_gpu = o.verify_slots_per_gpu;
  lane_options.timing_batch = o.timing_batch;
  lane_options.timing_delay = absl::Seconds(o.timing_delay_seconds);
  lane_options.clock = clock;
  if (WorkerMetrics* m = rt->metrics.get()) {
    lane_options.on_idle = [m](const Lane& lane, absl::Duration occupied) {
      m->AddLaneBusy(lane.name, absl::ToDoubleSeconds(occupied));
    };
  }
  rt->lanes = std::make_unique<LanePool>(std::move(lanes), lane_options);
  auto counted = [&](WarmPoolOptions warm) {
    warm.clock = clock;
    if (WorkerMetrics* m = rt->metrics.get()) {
      warm.on_take = [m](const Lane& lane, bool was_warm) { m->CountSideStart(lane.name, was_warm); };
    }
    return warm;
  };
  rt->native_warm = MakeNativeWarmPool(rt->lanes.get(), o.runner, counted(o.native_warm));
  rt->native = std::make_unique<NativeFormat>(
      NativeFormatOptions{o.task_root, o.work_dir, o.runner, rt->work_budget.get(), rt->native_warm.get()});
  rt->kb_warm = MakeKbWarmPool(rt->lanes.get(), o.runner, o.kb, counted(o.warm));
  rt->kernelbench = std::make_unique<KbFormat>(
      KbFormatOptions{o.task_root, o.work_dir, o.kb, o.runner, rt->work_budget.get(), rt->kb_warm.get()});
  if (registry) {
    WorkerMetrics* m = rt->metrics.get();
    struct Budgeted {
      DiskBudget* budget;
      const char* dir;
      int64_t max_bytes;
    };
    for (auto [budget, dir, max_bytes] : {Budgeted{rt->cache_budget.get(), "cache", o.cache_max_bytes},
                                          Budgeted{rt->work_budget.get(), "work", o.work_max_bytes}}) {
      m->disk_budget_bytes.Add({{"dir", dir}}).Set(static_cast<double>(max_bytes));
      budget->SetObserver([m, dir = std::string(dir)](int64_t bytes, int64_t evictions) {
        m->ObserveDisk(dir, bytes, evictions);
      });
    }
  }
  rt->engine = std::make_unique<EvalEngine>(o.engine, rt->compiler.get(), rt->lanes.get(),
                                            TaskFormats{rt->native.get(), rt->kernelbench.get()},
                                            rt->metrics.get(), clock);
  return rt;
}

absl::Status SelfTest(EvalEngine* engine, const WorkerOptions& options) {
  const std::string dir = FindShippedDir("tasks/native/row_sum");
  if (dir.empty()) {
    CRL_LOG(WARNING) << "crl-worker: no shipped tasks/native/row_sum beside the binary; self-test skipped";
    return absl::OkStatus();
  }
  const bool host = options.host_lanes > 0;
  CRL_ASSIGN_OR_RETURN(std::string source,
                       ReadFileToString(dir + (host ? "/reference.cc" : "/reference.cu"), "self-test reference"));
  v1::EvaluateRequest req;
  // Inline, so a --task_root that excludes the shipped tasks does not matter.
  req.mutable_task()->set_name("row_sum");
  req.mutable_task()->set_format(v1::TASK_FORMAT_NATIVE);
  for (const char* f : {"task.yaml", "reference.cc", "reference.cu"}) {
    auto content = ReadFileToString(dir + "/" + f, "self-test task");
    if (!content.ok()) continue;
    v1::File* file = req.mutable_task()->add_files();
    file->set_path(f);
    file->set_content(*content);
  }
  req.mutable_candidate()->set_source(source);
  req.mutable_candidate()->set_filename(host ? "self_test.cc" : "self_test.cu");
  req.mutable_candidate()->set_backend(host ? v1::BACKEND_HOST : v1::BACKEND_CUDA);
  RequestContext context(RealClock::Get(), absl::Now() + absl::Minutes(5));
  CRL_ASSIGN_OR_RETURN(v1::EvaluateResponse r, engine->Evaluate(req, context));
  if (r.verdict() != v1::VERDICT_OK) {
    std::string why = v1::Verdict_Name(r.verdict());
    for (const auto& m : r.messages()) absl::StrAppend(&why, "; ", m);
    if (!r.compile().log().empty()) absl::StrAppend(&why, "; compile log: ", r.compile().log().substr(0, 2000));
    return absl::FailedPreconditionError(absl::StrCat("self-test (", host ? "host" : "cuda",
                                                      " row_sum reference): ", why));
  }
  CRL_LOG(INFO) << "crl-worker: self-test passed (" << (host ? "host" : "cuda") << ")";
  return absl::OkStatus();
}

}  // namespace crl
