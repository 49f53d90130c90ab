// EvalEngine for KernelBench-format tasks: a .py task file and a .py
// candidate. The candidate's load_inline builds run on the CPU tier (the
// compiler's cache); both sides run as harness processes on a lane.
#include <chrono>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "services/worker/compare.h"
#include "services/worker/eval_engine.h"
#include "services/worker/kb_verifier.h"

namespace crl {
namespace {

namespace fs = std::filesystem;

double Since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string Status(const KbReply& r) { return KbField<std::string>(r.header, "status", ""); }

std::string Error(const KbReply& r) {
  return KbField<std::string>(r.header, "error", "failed").substr(0, 3000);
}

double Number(const KbReply& r, const char* key) { return KbField<double>(r.header, key, -1); }

// The harness always reports three positive, finite times; anything else
// was written by candidate code.
bool PlausibleTimes(const KbReply& r) {
  for (const char* key : {"stream_event_seconds", "device_sync_seconds", "host_seconds"}) {
    double v = Number(r, key);
    if (!(v > 0 && v < 1e6)) return false;
  }
  return true;
}

// Where a candidate's build artifact keeps the source the harness imports.
std::string CandidatePath(const std::string& manifest) {
  return (fs::path(manifest).parent_path() / "candidate.py").string();
}

}  // namespace

absl::StatusOr<std::shared_ptr<const KbTask>> EvalEngine::ResolveKbTask(const v1::Task& t) {
  if (t.path().empty() == (t.files_size() == 0)) {
    return absl::InvalidArgumentError("task: set exactly one of path or files");
  }
  std::string path;
  if (!t.path().empty()) {
    CRL_ASSIGN_OR_RETURN(path, ResolveTaskPath(options_.task_root, t.path()));
    if (fs::path(path).extension() != ".py") {
      return absl::InvalidArgumentError(
          absl::StrCat("task.path: '", t.path(), "' is not a KernelBench .py file"));
    }
  } else {
    if (t.files_size() != 1) {
      return absl::InvalidArgumentError("task.files: a KernelBench task is exactly one .py file");
    }
    // One directory per content, named by hash, so concurrent requests agree.
    const std::string& content = t.files(0).content();
    fs::path dir = fs::path(options_.work_dir) / "kb-tasks" / Sha256Hex(content);
    path = (dir / "task.py").string();
    if (!fs::exists(path)) {
      std::error_code ec;
      fs::create_directories(dir, ec);
      std::string tmp = absl::StrCat(path, ".tmp", seeds_() % 1000000);
      std::ofstream out(tmp, std::ios::binary);
      out << content;
      out.close();
      if (!out) return absl::InternalError(absl::StrCat("cannot write ", tmp));
      fs::rename(tmp, path, ec);
      if (ec) return absl::InternalError(absl::StrCat("cannot write ", path, ": ", ec.message()));
    }
  }
  auto loaded = LoadKbTask(path);
  if (!loaded.ok()) return Annotate(loaded.status(), "task");
  auto task = std::make_shared<KbTask>(std::move(*loaded));
  if (!t.name().empty()) task->name = t.name();
  return task;
}

absl::StatusOr<BackendKind> EvalEngine::KbBackend(v1::Backend requested) const {
  BackendKind backend = lanes_->Has(BackendKind::kCuda) ? BackendKind::kCuda : BackendKind::kHost;
  if (requested == v1::BACKEND_HOST) backend = BackendKind::kHost;
  if (requested == v1::BACKEND_CUDA) backend = BackendKind::kCuda;
  if (requested != v1::BACKEND_UNSPECIFIED && requested != v1::BACKEND_HOST &&
      requested != v1::BACKEND_CUDA) {
    return absl::InvalidArgumentError("backend: unknown value");
  }
  if (!lanes_->Has(backend)) {
    return absl::FailedPreconditionError(
        absl::StrCat("backend: this worker has no ", BackendName(backend), " lane"));
  }
  return backend;
}

absl::StatusOr<v1::CompileResponse> EvalEngine::CompileKb(const v1::CompileRequest& request) {
  CRL_ASSIGN_OR_RETURN(auto task, ResolveKbTask(request.task()));
  if (!request.has_candidate() || request.candidate().source().empty()) {
    return absl::InvalidArgumentError(
        "candidate.source: required (a KernelBench reference needs no compile step)");
  }
  CRL_ASSIGN_OR_RETURN(BackendKind backend, KbBackend(request.candidate().backend()));
  CRL_ASSIGN_OR_RETURN(CompileOutcome outcome,
                       CompileSource(backend, request.candidate().source(),
                                     request.candidate().filename(), request.limits(), true));
  v1::CompileResponse response;
  response.set_verdict(outcome.verdict);
  response.set_artifact_id(outcome.artifact_id);
  response.set_cache_hit(outcome.cache_hit);
  response.set_compile_seconds(outcome.seconds);
  response.set_log(outcome.log);
  return response;
}

absl::StatusOr<v1::EvaluateResponse> EvalEngine::EvaluateKb(const v1::EvaluateRequest& request) {
  CRL_ASSIGN_OR_RETURN(auto task, ResolveKbTask(request.task()));
  CRL_ASSIGN_OR_RETURN(BackendKind backend, KbBackend(request.candidate().backend()));
  v1::EvaluateResponse response;
  std::optional<CompileOutcome> compiled = CompileCandidate(backend, request, true, &response);
  if (!compiled) return response;

  VerifyConfig config = VerifyConfigFor(request);
  KbOptions kb = options_.kb;
  if (request.options().atol() > 0) kb.atol = request.options().atol();
  if (request.options().rtol() > 0) kb.rtol = request.options().rtol();

  KbVerifyInputs in;
  in.task = *task;
  in.manifest_path = compiled->library_path;
  in.candidate_path = CandidatePath(compiled->library_path);
  CRL_ASSIGN_OR_RETURN(LaneLease lease, lanes_->Acquire(backend, options_.lane_wait));
  // The probe runs once per task content and device kind.
  const std::string probe_key = absl::StrCat(task->sha256, "/", lease.lane().name);
  std::string degenerate;
  {
    absl::MutexLock lock(&mu_);
    auto it = degenerate_.find(probe_key);
    in.probe = it == degenerate_.end();
    if (!in.probe) degenerate = it->second;
  }
  auto start = std::chrono::steady_clock::now();
  if (metrics_) {
    metrics_->CountRunnerStart(BackendName(backend));
    metrics_->CountRunnerStart(BackendName(backend));
  }
  KbVerifyResult verified =
      VerifyKbCandidate(in, lease.lane(), options_.runner, kb, config, seeds_);
  if (metrics_) metrics_->AddLaneBusy(lease.lane().name, Since(start));
  if (verified.probed) {
    degenerate = verified.degenerate_probe;
    absl::MutexLock lock(&mu_);
    degenerate_[probe_key] = degenerate;
  }
  response.set_lane(lease.lane().name);
  response.set_custom_kernel(verified.custom_kernel);
  *response.mutable_correctness() = verified.report;
  for (const auto& m : verified.report.messages()) response.add_messages(m);
  for (size_t i = 0; i < verified.flags.size(); ++i) {
    response.add_flags(verified.flags[i]);
    response.add_flag_evidence(verified.flag_evidence[i]);
  }
  if (!degenerate.empty() && verified.verdict == v1::VERDICT_OK) {
    response.add_flags(v1::FLAG_DEGENERATE_TASK);
    response.add_flag_evidence(absl::StrCat("task '", task->name, "' is passed by the trivial '",
                                            degenerate, "' solution: its speedups mean nothing"));
  }
  Finish(&response, verified.verdict);
  return response;
}

absl::StatusOr<v1::MeasureResponse> EvalEngine::MeasureKb(const v1::MeasureRequest& request) {
  CRL_ASSIGN_OR_RETURN(auto task, ResolveKbTask(request.task()));
  CRL_ASSIGN_OR_RETURN(BackendKind backend, KbBackend(request.backend()));
  KbLoad load{"reference", task->path, "", ""};
  if (!request.artifact_id().empty()) {
    CRL_ASSIGN_OR_RETURN(std::string manifest, compiler_->LibraryFor(request.artifact_id()));
    load = {"candidate", task->path, CandidatePath(manifest), manifest};
  }
  const int iterations =
      request.iterations() > 0 ? request.iterations() : options_.measure_iterations;
  const int warmup = request.warmup() > 0 ? request.warmup() : options_.measure_warmup;
  const double per_call = options_.measure_call_timeout_seconds;

  v1::MeasureResponse response;
  CRL_ASSIGN_OR_RETURN(LaneLease lease, lanes_->Acquire(backend, options_.lane_wait));
  response.set_lane(lease.lane().name);
  auto start = std::chrono::steady_clock::now();
  auto done = [&](v1::Verdict v, const std::string& message) {
    response.set_verdict(v);
    if (!message.empty()) response.add_messages(message);
    if (metrics_) metrics_->AddLaneBusy(lease.lane().name, Since(start));
    return response;
  };
  if (metrics_) metrics_->CountRunnerStart(BackendName(backend));
  RunnerEvent event;
  auto session = KbSession::Start(options_.runner, options_.kb, lease.lane(), load,
                                  per_call * (iterations + warmup) + 120, &event);
  if (!session) return done(event.verdict, event.message);
  response.set_device_name(session->device_name());
  const uint64_t seed = request.seed() ? request.seed() : seeds_();
  for (int i = 0; i < warmup + iterations; ++i) {
    KbReply reply;
    auto t0 = std::chrono::steady_clock::now();
    event = session->Call({{"timed", true},
                           {"seed", runner::DeriveSeed(seed, 1000000 + i)},
                           {"flush_l2", !request.no_l2_flush()}},
                          per_call, &reply);
    const double outside = Since(t0);
    if (!event.ok) return done(event.verdict, absl::StrCat("call ", i + 1, ": ", event.message));
    if (Status(reply) != "ok") {
      return done(v1::VERDICT_RUNTIME_ERROR,
                  absl::StrCat("call ", i + 1, ": ", Error(reply)));
    }
    if (!PlausibleTimes(reply)) {
      return done(load.role == "reference" ? v1::VERDICT_INFRA_ERROR : v1::VERDICT_SANDBOX_VIOLATION,
                  absl::StrCat("call ", i + 1, ": forged timing report (not positive)"));
    }
    if (i < warmup) continue;
    v1::TimingSample* s = response.add_samples();
    s->set_stream_event_seconds(Number(reply, "stream_event_seconds"));
    s->set_device_sync_seconds(Number(reply, "device_sync_seconds"));
    s->set_host_seconds(Number(reply, "host_seconds"));
    response.add_outside_seconds(outside);
  }
  session->Close();
  return done(v1::VERDICT_OK, "");
}

absl::StatusOr<v1::MeasurePairResponse> EvalEngine::MeasurePairKb(
    const v1::MeasurePairRequest& request) {
  CRL_ASSIGN_OR_RETURN(auto task, ResolveKbTask(request.task()));
  CRL_ASSIGN_OR_RETURN(BackendKind backend, KbBackend(request.backend()));
  if (!request.reference_artifact_id().empty()) {
    return absl::InvalidArgumentError(
        "reference_artifact_id: KernelBench tasks time their own Model as the reference");
  }
  CRL_ASSIGN_OR_RETURN(std::string manifest,
                       compiler_->LibraryFor(request.candidate_artifact_id()));
  const PairLoop loop(request, request.seed() ? request.seed() : seeds_());
  const double per_call = options_.measure_call_timeout_seconds;

  v1::MeasurePairResponse response;
  CRL_ASSIGN_OR_RETURN(LaneLease lease, lanes_->Acquire(backend, options_.lane_wait));
  response.set_lane(lease.lane().name);
  const auto lane_start = std::chrono::steady_clock::now();
  auto done = [&](v1::Verdict v, const std::string& message) {
    response.set_verdict(v);
    if (!message.empty()) response.add_messages(message);
    if (metrics_) metrics_->AddLaneBusy(lease.lane().name, Since(lane_start));
    return response;
  };
  const double session_budget = loop.SessionBudget(per_call);
  if (metrics_) {
    metrics_->CountRunnerStart(BackendName(backend));
    metrics_->CountRunnerStart(BackendName(backend));
  }
  RunnerEvent event;
  auto ref = KbSession::Start(options_.runner, options_.kb, lease.lane(),
                              {"reference", task->path, "", ""}, session_budget, &event);
  if (!ref) return done(v1::VERDICT_INFRA_ERROR, absl::StrCat("reference: ", event.message));
  auto cand = KbSession::Start(options_.runner, options_.kb, lease.lane(),
                               {"candidate", task->path, CandidatePath(manifest), manifest},
                               session_budget, &event);
  if (!cand) return done(event.verdict, absl::StrCat("candidate: ", event.message));
  response.set_device_name(cand->device_name());

  auto fail = [&](bool is_ref, v1::Verdict candidate_verdict, const std::string& message) {
    done(is_ref ? v1::VERDICT_INFRA_ERROR : candidate_verdict,
         absl::StrCat(is_ref ? "reference: " : "candidate: ", message));
    return false;
  };
  auto timed = [&](bool is_ref, uint64_t seed, bool, v1::TimingSample* sample,
                   double* outside) -> bool {
    KbSession* s = is_ref ? ref.get() : cand.get();
    KbReply reply;
    auto t0 = std::chrono::steady_clock::now();
    event = s->Call({{"timed", true}, {"seed", seed}, {"flush_l2", !request.no_l2_flush()}},
                    per_call, &reply);
    *outside = Since(t0);
    if (!event.ok) return fail(is_ref, event.verdict, event.message);
    if (Status(reply) != "ok") {
      return fail(is_ref, v1::VERDICT_RUNTIME_ERROR, Error(reply));
    }
    if (KbField<int>(reply.header, "python_threads_after", 0) > 0) {
      return fail(is_ref, v1::VERDICT_WRONG_ANSWER,
                  "a Python thread was left running after a timed forward returned");
    }
    if (!PlausibleTimes(reply)) {
      return fail(is_ref, v1::VERDICT_SANDBOX_VIOLATION, "forged timing report (not positive)");
    }
    sample->set_stream_event_seconds(Number(reply, "stream_event_seconds"));
    sample->set_device_sync_seconds(Number(reply, "device_sync_seconds"));
    sample->set_host_seconds(Number(reply, "host_seconds"));
    return true;
  };
  // Outputs are fetched only after both sides of a pair returned, so a
  // candidate cannot tell a checked call from an unchecked one.
  auto check = [&](int) -> std::string {
    std::vector<KbTensor> outs[2];
    for (int side = 0; side < 2; ++side) {
      KbReply reply;
      event = (side == 0 ? ref : cand)->Fetch(per_call, &reply);
      if (!event.ok) return absl::StrCat(side == 0 ? "reference" : "candidate", ": ", event.message);
      auto decoded = DecodeKbTensors(reply);
      if (!decoded.ok()) return std::string(decoded.status().message());
      outs[side] = std::move(*decoded);
    }
    if (outs[0].size() != outs[1].size()) return "different number of outputs";
    for (size_t o = 0; o < outs[0].size(); ++o) {
      const auto& w = outs[0][o];
      if (w.spec.dtype != outs[1][o].spec.dtype || w.spec.shape != outs[1][o].spec.shape) {
        return absl::StrCat("output ", o, ": dtype or shape differs");
      }
      CompareResult c = CompareTensor(w.spec, outs[1][o].data, w.data,
                                      KbTolerance(options_.kb, w.spec.dtype));
      if (c.kind != CompareResult::kMatch) return absl::StrCat("output ", o, ": ", c.detail);
    }
    return "";
  };
  if (!loop.Run(timed, check, &response)) return response;
  if (ref->dead() || cand->dead()) {
    return done(v1::VERDICT_INFRA_ERROR, "a harness ended during output checks");
  }
  cand->Close();
  ref->Close();
  return done(v1::VERDICT_OK, "");
}

}  // namespace crl
