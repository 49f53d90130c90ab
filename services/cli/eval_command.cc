// crl eval: compile and verify one candidate, in-process or on a worker.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/file.h"
#include "common/status.h"
#include "lib/reward/names.h"
#include "lib/run/task_files.h"
#include "services/cli/commands.h"
#include "services/cli/endpoints.h"

namespace crl::cli {
namespace {

namespace fs = std::filesystem;

nlohmann::json EvaluateResponseJson(const v1::EvaluateResponse& r) {
  nlohmann::json j;
  j["status"] = VerdictShortName(r.verdict());
  j["correct"] = r.verdict() == v1::VERDICT_OK;
  j["max_abs_error"] = r.correctness().max_abs_error();
  j["max_rel_error"] = r.correctness().max_rel_error();
  j["mismatch_count"] = r.correctness().mismatch_count();
  j["first_mismatch_index"] = r.correctness().first_mismatch_index();
  j["first_mismatch_output"] = r.correctness().first_mismatch_output();
  j["trials"] = r.correctness().trials();
  j["trials_passed"] = r.correctness().trials_passed();
  j["compile_seconds"] = r.compile().compile_seconds();
  j["compile_cache_hit"] = r.compile().cache_hit();
  j["artifact_id"] = r.artifact_id();
  j["lane"] = r.lane();
  j["custom_kernel"] = r.custom_kernel();
  j["flags"] = nlohmann::json::array();
  for (int f : r.flags()) j["flags"].push_back(FlagShortName(static_cast<v1::Flag>(f)));
  j["flag_evidence"] = nlohmann::json::array();
  for (const auto& e : r.flag_evidence()) j["flag_evidence"].push_back(e);
  j["messages"] = nlohmann::json::array();
  for (const auto& m : r.messages()) j["messages"].push_back(m);
  if (r.verdict() == v1::VERDICT_COMPILE_ERROR) j["compile_log"] = r.compile().log();
  return j;
}

nlohmann::json TimeResponseJson(const v1::TimeResponse& t) {
  nlohmann::json j;
  j["timing_status"] = VerdictShortName(t.verdict());
  j["ref_seconds"] = t.ref_seconds();
  j["candidate_seconds"] = t.candidate_seconds();
  j["speedup"] = t.speedup();
  j["speedup_ci"] = {t.speedup_ci_low(), t.speedup_ci_high()};
  j["ref_stream_seconds"] = t.ref_stream_seconds();
  j["candidate_stream_seconds"] = t.candidate_stream_seconds();
  j["stop_reason"] = StopReasonShortName(t.stop_reason());
  j["calls_per_sample"] = t.calls_per_sample();
  j["timing_mode"] = t.timing_mode();
  if (!t.graph_fallback().empty()) j["graph_fallback"] = t.graph_fallback();
  j["measurements"] = t.measurements();
  j["measure_seconds"] = t.measure_seconds();
  j["device_name"] = t.device_name();
  j["flags"] = nlohmann::json::array();
  for (int f : t.flags()) j["flags"].push_back(FlagShortName(static_cast<v1::Flag>(f)));
  j["flag_evidence"] = nlohmann::json::array();
  for (const auto& e : t.flag_evidence()) j["flag_evidence"].push_back(e);
  nlohmann::json samples;
  for (const auto& s : t.ref_samples()) {
    samples["reference"].push_back({s.device_sync_seconds(), s.stream_event_seconds(), s.host_seconds()});
  }
  for (const auto& s : t.candidate_samples()) {
    samples["candidate"].push_back({s.device_sync_seconds(), s.stream_event_seconds(), s.host_seconds()});
  }
  samples["columns"] = {"device_sync_seconds", "stream_event_seconds", "host_seconds"};
  j["samples"] = samples;
  return j;
}

}  // namespace

int EvalCommand(int argc, char** argv) {
  std::string task_path, candidate_path, backend_name;
  bool json = false, time = false;
  double target_rel_ci = 0, budget_seconds = 0, min_sample_seconds = 0;
  int max_calls_per_sample = 0;
  bool eager_timing = false;
  EndpointFlags endpoints;
  endpoints.client.timeout = absl::Minutes(10);
  OptionSet flags("crl eval",
                  "Compiles and verifies a candidate against a task. Exit 0 whenever an\n"
                  "evaluation happened, whatever the verdict; 2 for usage errors; 3 for\n"
                  "infrastructure errors (INFRA_ERROR included).");
  flags.Add("task", &task_path,
            "task directory (native format) or .py file (KernelBench format)");
  flags.Add("candidate", &candidate_path, "candidate source file");
  flags.Add("backend", &backend_name, "host or cuda (default: the worker's choice)");
  flags.Add("json", &json, "print one JSON object");
  flags.Add("time", &time,
            "time a correct candidate against the reference (the timing oracle: in-process, "
            "or crl-timing with --worker and --timing)");
  flags.Add("target_rel_ci", &target_rel_ci,
            "with --time: stop at this relative CI half-width of the speedup (0: default)");
  flags.Add("budget_seconds", &budget_seconds, "with --time: measuring budget (0: default)");
  flags.Add("min_sample_seconds", &min_sample_seconds,
            "with --time: batch short calls into samples at least this long (0: default; negative: one call)");
  flags.Add("max_calls_per_sample", &max_calls_per_sample,
            "with --time: most calls in one batched sample (0: default)");
  flags.Add("eager_timing", &eager_timing,
            "with --time: time GPU calls as launched instead of replaying CUDA graphs of them");
  endpoints.Bind(&flags);
  absl::Status s = flags.Parse(argc, argv, nullptr);
  if (s.ok() && !flags.help_requested()) {
    if (task_path.empty()) s = absl::InvalidArgumentError("--task is required");
    else if (candidate_path.empty()) s = absl::InvalidArgumentError("--candidate is required");
  }
  v1::Backend backend = v1::BACKEND_UNSPECIFIED;
  if (s.ok() && !backend_name.empty()) {
    if (backend_name == "host") backend = v1::BACKEND_HOST;
    else if (backend_name == "cuda") backend = v1::BACKEND_CUDA;
    else s = absl::InvalidArgumentError("--backend must be host or cuda");
  }
  if (!s.ok() || flags.help_requested()) return UsageError(flags, s);

  auto source = ReadFileToString(candidate_path, "candidate");
  if (!source.ok()) return UsageError(flags, source.status());
  v1::EvaluateRequest request;
  request.mutable_candidate()->set_source(*source);
  request.mutable_candidate()->set_filename(fs::path(candidate_path).filename().string());
  request.mutable_candidate()->set_backend(backend);

  auto connected = Connect(endpoints, time);
  if (!connected.ok()) {
    if (connected.status().code() == absl::StatusCode::kInvalidArgument) {
      return UsageError(flags, connected.status());
    }
    return Fail(connected.status());
  }
  auto task = run::TaskFor(task_path, connected->remote);
  if (!task.ok()) return UsageError(flags, task.status());
  *request.mutable_task() = std::move(*task);
  const RequestContext& context = RequestContext::Background();
  absl::StatusOr<v1::EvaluateResponse> response = connected->worker->Evaluate(request, context);
  if (!response.ok()) {
    // Request problems (bad task, bad backend) are usage errors; the rest is infra.
    bool usage = response.status().code() == absl::StatusCode::kInvalidArgument ||
                 response.status().code() == absl::StatusCode::kNotFound;
    std::fprintf(stderr, "crl eval: %s\n", response.status().ToString().c_str());
    return usage ? 2 : 3;
  }
  std::optional<v1::TimeResponse> timed;
  if (time && response->verdict() == v1::VERDICT_OK) {
    v1::TimeRequest t;
    *t.mutable_task() = request.task();
    t.set_artifact_id(response->artifact_id());
    t.set_backend(backend);
    t.set_target_rel_ci(target_rel_ci);
    t.set_budget_seconds(budget_seconds);
    t.set_min_sample_seconds(min_sample_seconds);
    t.set_max_calls_per_sample(max_calls_per_sample);
    t.set_eager_timing(eager_timing);
    auto result = connected->timing->Time(t, context);
    if (!result.ok()) {
      std::fprintf(stderr, "crl eval: timing: %s\n", result.status().ToString().c_str());
      return 3;
    }
    timed = std::move(*result);
  }
  if (json) {
    nlohmann::json j = EvaluateResponseJson(*response);
    if (timed) {
      // One list of flags: verification's, then the oracle's.
      nlohmann::json flags_list = j["flags"], evidence = j["flag_evidence"];
      j.update(TimeResponseJson(*timed));
      for (const auto& f : j["flags"]) {
        if (std::find(flags_list.begin(), flags_list.end(), f) == flags_list.end()) flags_list.push_back(f);
      }
      for (const auto& e : j["flag_evidence"]) evidence.push_back(e);
      j["flags"] = flags_list;
      j["flag_evidence"] = evidence;
    }
    std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    std::printf("%s  %s  (compile %.2fs%s, %d/%d trials, max abs err %.3g, lane %s)\n",
                VerdictShortName(response->verdict()).c_str(), candidate_path.c_str(),
                response->compile().compile_seconds(),
                response->compile().cache_hit() ? " cached" : "",
                response->correctness().trials_passed(), response->correctness().trials(),
                response->correctness().max_abs_error(), response->lane().c_str());
    for (const auto& m : response->messages()) std::printf("  %s\n", m.c_str());
    for (const auto& e : response->flag_evidence()) std::printf("  flag: %s\n", e.c_str());
    if (response->verdict() == v1::VERDICT_COMPILE_ERROR) {
      std::printf("%s\n", response->compile().log().c_str());
    }
    if (timed) {
      std::printf("  timing: reference %.4g ms, candidate %.4g ms, speedup %.3fx [%.3f, %.3f] (%s)\n",
                  timed->ref_seconds() * 1e3, timed->candidate_seconds() * 1e3, timed->speedup(),
                  timed->speedup_ci_low(), timed->speedup_ci_high(),
                  StopReasonShortName(timed->stop_reason()).c_str());
      for (const auto& e : timed->flag_evidence()) std::printf("  %s\n", e.c_str());
    }
  }
  if (timed && timed->verdict() == v1::VERDICT_INFRA_ERROR) return 3;
  return response->verdict() == v1::VERDICT_INFRA_ERROR ? 3 : 0;
}

}  // namespace crl::cli
