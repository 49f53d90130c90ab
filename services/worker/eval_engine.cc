#include "services/worker/eval_engine.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "runner/inputs.h"
#include "services/timing/stats.h"
#include "services/worker/compare.h"

namespace crl {
namespace {

namespace fs = std::filesystem;

double Since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

absl::StatusOr<BackendKind> FromProto(v1::Backend b) {
  switch (b) {
    case v1::BACKEND_HOST: return BackendKind::kHost;
    case v1::BACKEND_CUDA: return BackendKind::kCuda;
    default: return absl::InvalidArgumentError("backend: unknown value");
  }
}

// Bundle file names may not escape the bundle directory.
bool SafeRelativePath(const std::string& p) {
  if (p.empty() || p[0] == '/' || p.size() > 255) return false;
  for (const auto& part : fs::path(p)) {
    if (part == ".." || part == ".") return false;
  }
  return true;
}

std::string KillReason(v1::Verdict v) {
  switch (v) {
    case v1::VERDICT_TIMEOUT: return "timeout";
    case v1::VERDICT_SANDBOX_VIOLATION: return "seccomp";
    case v1::VERDICT_RESOURCE_LIMIT: return "resource_limit";
    case v1::VERDICT_RUNTIME_ERROR: return "crash";
    default: return "";
  }
}

// The timed calls of Measure and MeasurePair: the task's timed size, each
// input from its first distribution (seeds are set per call).
absl::StatusOr<runner::TimedCallRequest> TimedCallAtTimedSize(const NativeTask& task) {
  runner::TimedCallRequest call;
  CRL_ASSIGN_OR_RETURN(call.inputs, task.InputSpecs(task.sizes));
  CRL_ASSIGN_OR_RETURN(call.outputs, task.OutputSpecs(task.sizes));
  call.scalars = task.ScalarValues();
  for (const auto& in : task.inputs) call.distributions.push_back(in.distribution_text.front());
  return call;
}

}  // namespace

absl::StatusOr<std::string> ResolveTaskPath(const std::string& task_root, const std::string& path) {
  fs::path p = path;
  if (task_root.empty()) return p.string();
  if (p.is_relative()) p = fs::path(task_root) / p;
  std::error_code ec;
  fs::path canon = fs::weakly_canonical(p, ec);
  fs::path root = fs::weakly_canonical(task_root, ec);
  auto rel = canon.lexically_relative(root);
  if (rel.empty() || *rel.begin() == "..") {
    return absl::InvalidArgumentError(
        absl::StrCat("task.path: '", path, "' is outside the task root"));
  }
  return canon.string();
}

EvalEngine::EvalEngine(EngineOptions options, CompilerInterface* compiler, LanePool* lanes,
                       WorkerMetrics* metrics, SeedSource seeds)
    : options_(std::move(options)),
      compiler_(compiler),
      lanes_(lanes),
      metrics_(metrics),
      seeds_(std::move(seeds)),
      compile_slots_(options_.compile_slots > 0
                         ? options_.compile_slots
                         : std::max(1u, std::thread::hardware_concurrency())) {}

void EvalEngine::AcquireCompileSlot() {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](EvalEngine* e) ABSL_EXCLUSIVE_LOCKS_REQUIRED(e->mu_) {
        return e->compiles_running_ < e->compile_slots_;
      },
      this));
  ++compiles_running_;
}

void EvalEngine::ReleaseCompileSlot() {
  absl::MutexLock lock(&mu_);
  --compiles_running_;
}

absl::StatusOr<std::shared_ptr<const NativeTask>> EvalEngine::ResolveTask(const v1::Task& t) {
  if (t.format() == v1::TASK_FORMAT_KERNELBENCH) {
    return absl::InvalidArgumentError("task.format: a KernelBench task where a native one is needed");
  }
  if (t.format() != v1::TASK_FORMAT_NATIVE && t.format() != v1::TASK_FORMAT_UNSPECIFIED) {
    return absl::InvalidArgumentError("task.format: unknown value");
  }
  if (t.path().empty() == (t.files_size() == 0)) {
    return absl::InvalidArgumentError("task: set exactly one of path or files");
  }
  fs::path dir;
  if (!t.path().empty()) {
    CRL_ASSIGN_OR_RETURN(std::string p, ResolveTaskPath(options_.task_root, t.path()));
    dir = p;
  } else {
    // Inline bundle: unpack once per content hash.
    std::string key;
    for (const v1::File& f : t.files()) {
      if (!SafeRelativePath(f.path())) {
        return absl::InvalidArgumentError(
            absl::StrCat("task.files: bad path '", f.path(), "' (relative, no '..')"));
      }
      absl::StrAppend(&key, f.path().size(), ":", f.path(), f.content().size(), ":", f.content());
    }
    dir = fs::path(options_.work_dir) / "tasks" / Sha256Hex(key);
    if (!fs::exists(dir / "task.yaml")) {
      fs::path tmp = dir.string() + ".tmp" + std::to_string(seeds_() % 1000000);
      std::error_code ec;
      fs::create_directories(tmp, ec);
      for (const v1::File& f : t.files()) {
        fs::create_directories((tmp / f.path()).parent_path(), ec);
        std::ofstream out(tmp / f.path(), std::ios::binary);
        out << f.content();
        if (!out) return absl::InternalError(absl::StrCat("cannot unpack task into ", tmp.string()));
      }
      fs::rename(tmp, dir, ec);
      if (ec) fs::remove_all(tmp, ec);  // another request unpacked it first
    }
  }

  std::error_code ec;
  auto mtime = fs::last_write_time(dir / "task.yaml", ec);
  int64_t mtime_ns = ec ? 0 : mtime.time_since_epoch().count();
  {
    absl::MutexLock lock(&mu_);
    auto it = tasks_.find(dir.string());
    if (it != tasks_.end() && it->second.mtime_ns == mtime_ns) return it->second.task;
  }
  auto loaded = LoadNativeTask(dir.string());
  if (!loaded.ok()) return Annotate(loaded.status(), "task");
  auto task = std::make_shared<const NativeTask>(std::move(*loaded));
  absl::MutexLock lock(&mu_);
  tasks_[dir.string()] = {task, mtime_ns};
  return task;
}

absl::StatusOr<BackendKind> EvalEngine::ResolveBackend(v1::Backend requested,
                                                       const NativeTask& task) const {
  BackendKind backend;
  if (requested == v1::BACKEND_UNSPECIFIED) {
    backend = lanes_->Has(BackendKind::kCuda) && task.Supports(BackendKind::kCuda)
                  ? BackendKind::kCuda
                  : BackendKind::kHost;
  } else {
    CRL_ASSIGN_OR_RETURN(backend, FromProto(requested));
  }
  if (!task.Supports(backend)) {
    return absl::InvalidArgumentError(absl::StrCat("backend: task '", task.name, "' has no ",
                                                   BackendName(backend), " reference"));
  }
  if (!lanes_->Has(backend)) {
    return absl::FailedPreconditionError(
        absl::StrCat("backend: this worker has no ", BackendName(backend), " lane"));
  }
  return backend;
}

absl::StatusOr<CompileOutcome> EvalEngine::CompileSource(BackendKind backend,
                                                         const std::string& source,
                                                         const std::string& filename,
                                                         const v1::CompileLimits& limits,
                                                         bool kernelbench) {
  CompileJob job;
  job.backend = backend;
  job.kernelbench = kernelbench;
  job.source = source;
  job.filename = filename;
  job.timeout_seconds = limits.wall_seconds();
  job.max_log_bytes = limits.max_log_bytes();
  AcquireCompileSlot();
  auto outcome = compiler_->Compile(job);
  ReleaseCompileSlot();
  if (outcome.ok() && metrics_) {
    metrics_->ObserveCompile(BackendName(backend), outcome->seconds, outcome->cache_hit);
  }
  return outcome;
}

absl::StatusOr<std::string> EvalEngine::ReferenceLibrary(const NativeTask& task,
                                                         BackendKind backend) {
  std::ifstream in(task.reference.at(backend));
  std::stringstream ss;
  ss << in.rdbuf();
  CRL_ASSIGN_OR_RETURN(CompileOutcome ref,
                       CompileSource(backend, ss.str(), task.reference.at(backend), {}));
  if (ref.verdict != v1::VERDICT_OK) {
    return absl::FailedPreconditionError(absl::StrCat(
        "task '", task.name, "': the ", BackendName(backend), " reference does not compile (",
        v1::Verdict_Name(ref.verdict), "): ", ref.log.substr(0, 2000)));
  }
  return ref.library_path;
}

absl::StatusOr<v1::CompileResponse> EvalEngine::Compile(const v1::CompileRequest& request) {
  if (request.task().format() == v1::TASK_FORMAT_KERNELBENCH) return CompileKb(request);
  CRL_ASSIGN_OR_RETURN(auto task, ResolveTask(request.task()));
  v1::Backend requested =
      request.has_candidate() ? request.candidate().backend() : v1::BACKEND_UNSPECIFIED;
  CRL_ASSIGN_OR_RETURN(BackendKind backend, ResolveBackend(requested, *task));
  std::string source, filename;
  if (request.has_candidate()) {
    source = request.candidate().source();
    filename = request.candidate().filename();
    if (source.empty()) return absl::InvalidArgumentError("candidate.source: empty");
  } else {
    std::ifstream in(task->reference.at(backend));
    std::stringstream ss;
    ss << in.rdbuf();
    source = ss.str();
    filename = task->reference.at(backend);
  }
  auto outcome = CompileSource(backend, source, filename, request.limits());
  if (!outcome.ok()) return outcome.status();
  v1::CompileResponse response;
  response.set_verdict(outcome->verdict);
  response.set_artifact_id(outcome->artifact_id);
  response.set_cache_hit(outcome->cache_hit);
  response.set_compile_seconds(outcome->seconds);
  response.set_log(outcome->log);
  return response;
}

std::optional<CompileOutcome> EvalEngine::CompileCandidate(BackendKind backend,
                                                           const v1::EvaluateRequest& request,
                                                           bool kernelbench,
                                                           v1::EvaluateResponse* response) {
  auto compiled = CompileSource(backend, request.candidate().source(),
                                request.candidate().filename(), request.compile_limits(),
                                kernelbench);
  if (!compiled.ok()) {
    response->add_messages(absl::StrCat("compile: ", compiled.status().ToString()));
    Finish(response, v1::VERDICT_INFRA_ERROR);
    return std::nullopt;
  }
  v1::CompileResponse* c = response->mutable_compile();
  c->set_verdict(compiled->verdict);
  c->set_artifact_id(compiled->artifact_id);
  c->set_cache_hit(compiled->cache_hit);
  c->set_compile_seconds(compiled->seconds);
  c->set_log(compiled->log);
  response->set_artifact_id(compiled->artifact_id);
  if (compiled->verdict != v1::VERDICT_OK) {
    Finish(response, compiled->verdict);
    return std::nullopt;
  }
  return std::move(*compiled);
}

VerifyConfig EvalEngine::VerifyConfigFor(const v1::EvaluateRequest& request) const {
  VerifyConfig config = options_.verify;
  if (request.options().trials() > 0) config.trials = request.options().trials();
  if (request.options().skip_determinism_check()) config.determinism_reruns = 0;
  if (request.options().call_timeout_seconds() > 0) {
    config.call_timeout_seconds = request.options().call_timeout_seconds();
  }
  return config;
}

void EvalEngine::Finish(v1::EvaluateResponse* response, v1::Verdict verdict) {
  response->set_verdict(verdict);
  if (metrics_) {
    metrics_->CountEvaluation(verdict);
    if (std::string r = KillReason(verdict); !r.empty()) metrics_->CountSandboxKill(r);
  }
}

absl::StatusOr<v1::EvaluateResponse> EvalEngine::Evaluate(const v1::EvaluateRequest& request) {
  if (!request.has_candidate() || request.candidate().source().empty()) {
    return absl::InvalidArgumentError("candidate.source: empty");
  }
  if (request.options().trials() < 0 || request.options().trials() > 1000) {
    return absl::InvalidArgumentError("options.trials: must be between 0 and 1000");
  }
  if (request.task().format() == v1::TASK_FORMAT_KERNELBENCH) return EvaluateKb(request);
  CRL_ASSIGN_OR_RETURN(auto task, ResolveTask(request.task()));
  CRL_ASSIGN_OR_RETURN(BackendKind backend,
                       ResolveBackend(request.candidate().backend(), *task));
  v1::EvaluateResponse response;
  std::optional<CompileOutcome> compiled = CompileCandidate(backend, request, false, &response);
  if (!compiled) return response;

  CRL_ASSIGN_OR_RETURN(std::string reference, ReferenceLibrary(*task, backend));

  VerifyConfig config = VerifyConfigFor(request);
  if (request.options().atol() > 0) config.atol = request.options().atol();
  if (request.options().rtol() > 0) config.rtol = request.options().rtol();

  CRL_ASSIGN_OR_RETURN(LaneLease lease, lanes_->Acquire(backend, options_.lane_wait));
  auto start = std::chrono::steady_clock::now();
  if (metrics_) {
    metrics_->CountRunnerStart(BackendName(backend));
    metrics_->CountRunnerStart(BackendName(backend));
  }
  VerifyResult verified = VerifyCandidate(*task, lease.lane(), reference,
                                          compiled->library_path, options_.runner, config, seeds_);
  if (metrics_) metrics_->AddLaneBusy(lease.lane().name, Since(start));
  response.set_lane(lease.lane().name);
  response.set_custom_kernel(true);
  *response.mutable_correctness() = verified.report;
  for (const auto& m : verified.report.messages()) response.add_messages(m);
  Finish(&response, verified.verdict);
  return response;
}

absl::StatusOr<v1::MeasureResponse> EvalEngine::Measure(const v1::MeasureRequest& request) {
  if (request.iterations() < 0 || request.iterations() > 100000) {
    return absl::InvalidArgumentError("iterations: must be between 0 and 100000");
  }
  if (request.warmup() < 0 || request.warmup() > 10000) {
    return absl::InvalidArgumentError("warmup: must be between 0 and 10000");
  }
  if (request.task().format() == v1::TASK_FORMAT_KERNELBENCH) return MeasureKb(request);
  CRL_ASSIGN_OR_RETURN(auto task, ResolveTask(request.task()));
  CRL_ASSIGN_OR_RETURN(BackendKind backend, ResolveBackend(request.backend(), *task));
  std::string library;
  if (request.artifact_id().empty()) {
    CRL_ASSIGN_OR_RETURN(library, ReferenceLibrary(*task, backend));
  } else {
    CRL_ASSIGN_OR_RETURN(library, compiler_->LibraryFor(request.artifact_id()));
  }
  const int iterations = request.iterations() > 0 ? request.iterations() : options_.measure_iterations;
  const int warmup = request.warmup() > 0 ? request.warmup() : options_.measure_warmup;
  const double per_call = options_.measure_call_timeout_seconds;

  CRL_ASSIGN_OR_RETURN(runner::TimedCallRequest call, TimedCallAtTimedSize(*task));
  call.flush_l2 = !request.no_l2_flush();

  v1::MeasureResponse response;
  CRL_ASSIGN_OR_RETURN(LaneLease lease, lanes_->Acquire(backend, options_.lane_wait));
  response.set_lane(lease.lane().name);
  auto start = std::chrono::steady_clock::now();
  if (metrics_) metrics_->CountRunnerStart(BackendName(backend));
  RunnerEvent event;
  auto session = RunnerSession::Start(options_.runner, lease.lane(), library,
                                      per_call * (iterations + warmup) + 60, &event);
  auto done = [&](v1::Verdict v, const std::string& message) {
    response.set_verdict(v);
    if (!message.empty()) response.add_messages(message);
    if (metrics_) metrics_->AddLaneBusy(lease.lane().name, Since(start));
    return response;
  };
  if (!session) return done(event.verdict, event.message);
  response.set_device_name(session->device_name());
  const uint64_t seed = request.seed() ? request.seed() : seeds_();
  for (int i = 0; i < warmup + iterations; ++i) {
    call.call_id = i + 1;
    call.seed = runner::DeriveSeed(seed, 1000000 + i);  // fresh inputs every call
    runner::TimedCallResult result;
    auto t0 = std::chrono::steady_clock::now();
    event = session->TimedCall(call, per_call, &result);
    double outside = Since(t0);
    if (!event.ok) return done(event.verdict, absl::StrCat("call ", i + 1, ": ", event.message));
    if (result.status != runner::kOk) {
      return done(VerdictForResult(result.status, result.error),
                  absl::StrCat("call ", i + 1, ": ", runner::RunStatusName(result.status), ": ",
                               result.error));
    }
    if (i < warmup) continue;
    v1::TimingSample* s = response.add_samples();
    s->set_stream_event_seconds(result.stream_event_seconds);
    s->set_device_sync_seconds(result.device_sync_seconds);
    s->set_host_seconds(result.host_seconds);
    response.add_outside_seconds(outside);
  }
  session->Close();
  return done(v1::VERDICT_OK, "");
}

absl::Status ValidatePairRequest(const v1::MeasurePairRequest& request) {
  if (request.candidate_artifact_id().empty()) {
    return absl::InvalidArgumentError("candidate_artifact_id: empty");
  }
  if (request.min_pairs() < 0 || request.max_pairs() < 0 || request.max_pairs() > 100000 ||
      request.block_size() < 0 || request.warmup() < 0 || request.warmup() > 10000 ||
      request.budget_seconds() < 0 || request.target_rel_ci() < 0 ||
      request.check_outputs_every() < 0) {
    return absl::InvalidArgumentError("measure pair limits: negative or too large");
  }
  return absl::OkStatus();
}

PairLoop::PairLoop(const v1::MeasurePairRequest& request, uint64_t seed)
    : warmup(request.warmup() > 0 ? request.warmup() : 5),
      min_pairs(request.min_pairs() > 0 ? request.min_pairs() : 20),
      max_pairs(std::max(min_pairs, request.max_pairs() > 0 ? request.max_pairs() : 400)),
      block(request.block_size() > 0 ? request.block_size() : 5),
      check_every(request.check_outputs_every() > 0 ? request.check_outputs_every() : 5),
      target(request.target_rel_ci() > 0 ? request.target_rel_ci() : 0.01),
      budget(request.budget_seconds() > 0 ? request.budget_seconds() : 30),
      seed(seed) {}

bool PairLoop::Run(const TimedFn& timed, const CheckFn& check,
                   v1::MeasurePairResponse* response) const {
  uint64_t order_state = seed ^ 0x5DEECE66Dull;
  v1::TimingSample sample;
  double outside = 0;
  for (int i = 0; i < warmup; ++i) {
    uint64_t s = runner::DeriveSeed(seed, 2000000 + i);
    if (!timed(true, s, false, &sample, &outside)) return false;
    if (!timed(false, s, false, &sample, &outside)) return false;
  }
  std::vector<double> ref_t, cand_t;
  const auto loop_start = std::chrono::steady_clock::now();
  int pairs = 0;
  while (pairs < max_pairs) {
    const bool ref_first = runner::SplitMix64(&order_state) & 1;
    for (int b = 0; b < block && pairs < max_pairs; ++b, ++pairs) {
      const uint64_t s = runner::DeriveSeed(seed, pairs);
      const bool checked = pairs % check_every == 0;
      v1::TimingSample samples[2];
      double outsides[2] = {0, 0};
      for (int side = 0; side < 2; ++side) {
        const bool is_ref = (side == 0) == ref_first;
        if (!timed(is_ref, s, checked, &samples[is_ref ? 0 : 1], &outsides[is_ref ? 0 : 1])) {
          return false;
        }
      }
      *response->add_reference_samples() = samples[0];
      response->add_reference_outside_seconds(outsides[0]);
      *response->add_candidate_samples() = samples[1];
      response->add_candidate_outside_seconds(outsides[1]);
      ref_t.push_back(samples[0].device_sync_seconds());
      cand_t.push_back(samples[1].device_sync_seconds());
      if (checked) {
        // Same seed, same inputs: the timed outputs must agree as in verification.
        response->set_output_checks(response->output_checks() + 1);
        if (std::string mismatch = check(pairs); !mismatch.empty()) {
          response->set_output_mismatches(response->output_mismatches() + 1);
          if (response->output_mismatch_detail().empty()) {
            response->set_output_mismatch_detail(absl::StrCat("pair ", pairs, ": ", mismatch));
          }
        }
      }
    }
    if (Since(loop_start) > budget) break;
    if (pairs >= min_pairs) {
      auto ci = timing::BootstrapSpeedup(ref_t, cand_t, 200, seed + pairs);
      if (ci.relative_half_width < target) {
        response->set_converged(true);
        break;
      }
    }
  }
  response->set_elapsed_seconds(Since(loop_start));
  return true;
}

absl::StatusOr<v1::MeasurePairResponse> EvalEngine::MeasurePair(
    const v1::MeasurePairRequest& request) {
  CRL_RETURN_IF_ERROR(ValidatePairRequest(request));
  if (request.task().format() == v1::TASK_FORMAT_KERNELBENCH) return MeasurePairKb(request);
  CRL_ASSIGN_OR_RETURN(auto task, ResolveTask(request.task()));
  CRL_ASSIGN_OR_RETURN(BackendKind backend, ResolveBackend(request.backend(), *task));
  CRL_ASSIGN_OR_RETURN(std::string cand_lib, compiler_->LibraryFor(request.candidate_artifact_id()));
  std::string ref_lib;
  if (request.reference_artifact_id().empty()) {
    CRL_ASSIGN_OR_RETURN(ref_lib, ReferenceLibrary(*task, backend));
  } else {
    CRL_ASSIGN_OR_RETURN(ref_lib, compiler_->LibraryFor(request.reference_artifact_id()));
  }
  const PairLoop loop(request, request.seed() ? request.seed() : seeds_());
  const double per_call = options_.measure_call_timeout_seconds;

  CRL_ASSIGN_OR_RETURN(runner::TimedCallRequest call, TimedCallAtTimedSize(*task));
  call.flush_l2 = !request.no_l2_flush();

  v1::MeasurePairResponse response;
  for (auto [expr, setter] :
       {std::pair{task->bytes_expr, &v1::MeasurePairResponse::set_task_bytes},
        std::pair{task->flops_expr, &v1::MeasurePairResponse::set_task_flops}}) {
    if (expr.empty()) continue;
    auto v = EvalSizeExpr(expr, task->sizes);
    if (v.ok()) (response.*setter)(static_cast<double>(*v));
  }
  CRL_ASSIGN_OR_RETURN(LaneLease lease, lanes_->Acquire(backend, options_.lane_wait));
  response.set_lane(lease.lane().name);
  const auto lane_start = std::chrono::steady_clock::now();
  auto done = [&](v1::Verdict v, const std::string& message) {
    response.set_verdict(v);
    if (!message.empty()) response.add_messages(message);
    if (metrics_) metrics_->AddLaneBusy(lease.lane().name, Since(lane_start));
    return response;
  };
  // Both runners stay alive for the whole loop, so drift hits both sides.
  const double session_budget = loop.SessionBudget(per_call);
  RunnerEvent event;
  if (metrics_) {
    metrics_->CountRunnerStart(BackendName(backend));
    metrics_->CountRunnerStart(BackendName(backend));
  }
  auto ref = RunnerSession::Start(options_.runner, lease.lane(), ref_lib, session_budget, &event);
  if (!ref) return done(v1::VERDICT_INFRA_ERROR, absl::StrCat("reference runner: ", event.message));
  auto cand = RunnerSession::Start(options_.runner, lease.lane(), cand_lib, session_budget, &event);
  if (!cand) return done(event.verdict, absl::StrCat("candidate runner: ", event.message));
  response.set_device_name(cand->device_name());

  uint64_t call_id = 0;
  runner::TimedCallResult results[2];  // [0] reference, [1] candidate
  auto timed = [&](bool is_ref, uint64_t input_seed, bool outputs, v1::TimingSample* sample,
                   double* outside) -> bool {
    runner::TimedCallResult* result = &results[is_ref ? 0 : 1];
    call.call_id = ++call_id;
    call.seed = input_seed;
    call.return_outputs = outputs;
    auto t0 = std::chrono::steady_clock::now();
    event = (is_ref ? ref : cand)->TimedCall(call, per_call, result);
    *outside = Since(t0);
    const char* side = is_ref ? "reference" : "candidate";
    if (!event.ok) {
      done(is_ref ? v1::VERDICT_INFRA_ERROR : event.verdict, absl::StrCat(side, ": ", event.message));
      return false;
    }
    if (result->status != runner::kOk) {
      done(is_ref ? v1::VERDICT_INFRA_ERROR : VerdictForResult(result->status, result->error),
           absl::StrCat(side, ": ", runner::RunStatusName(result->status), ": ", result->error));
      return false;
    }
    sample->set_stream_event_seconds(result->stream_event_seconds);
    sample->set_device_sync_seconds(result->device_sync_seconds);
    sample->set_host_seconds(result->host_seconds);
    return true;
  };
  auto check = [&](int) -> std::string {
    const auto& r = results[0].output_data;
    const auto& c = results[1].output_data;
    if (r.size() != call.outputs.size() || c.size() != call.outputs.size()) return "outputs missing";
    for (size_t o = 0; o < call.outputs.size(); ++o) {
      CompareResult cmp = CompareTensor(call.outputs[o], c[o], r[o],
                                        task->ToleranceFor(call.outputs[o].dtype));
      if (cmp.kind != CompareResult::kMatch) return cmp.detail;
    }
    return "";
  };
  if (!loop.Run(timed, check, &response)) return response;
  cand->Close();
  ref->Close();
  return done(v1::VERDICT_OK, "");
}

v1::WorkerInfo EvalEngine::Info() const {
  v1::WorkerInfo info;
  bool host = false, cuda = false;
  for (const Lane& l : lanes_->lanes()) {
    info.add_lanes(l.name);
    (l.backend == BackendKind::kCuda ? cuda : host) = true;
  }
  if (host) {
    info.add_backends(v1::BACKEND_HOST);
    info.add_toolchains(compiler_->Toolchain(BackendKind::kHost));
  }
  if (cuda) {
    info.add_backends(v1::BACKEND_CUDA);
    info.add_toolchains(compiler_->Toolchain(BackendKind::kCuda));
  }
  return info;
}

}  // namespace crl
