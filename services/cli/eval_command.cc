// crl eval: compile and verify one candidate, in-process or on a worker.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/client.h"
#include "common/status.h"
#include "crl/v1/eval.grpc.pb.h"
#include "services/cli/commands.h"
#include "services/worker/worker_setup.h"

namespace crl::cli {
namespace {

namespace fs = std::filesystem;

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The task as an inline bundle (task.yaml and top-level sources), for a
// worker that does not share our file system.
absl::StatusOr<v1::Task> BundleTask(const std::string& dir) {
  v1::Task task;
  task.set_format(v1::TASK_FORMAT_NATIVE);
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (!entry.is_regular_file()) continue;
    CRL_ASSIGN_OR_RETURN(std::string content, ReadFile(entry.path().string()));
    v1::File* f = task.add_files();
    f->set_path(entry.path().filename().string());
    f->set_content(std::move(content));
  }
  if (ec) return absl::NotFoundError(absl::StrCat("task directory ", dir, ": ", ec.message()));
  return task;
}

std::string VerdictName(v1::Verdict v) {
  std::string name = v1::Verdict_Name(v);
  return name.rfind("VERDICT_", 0) == 0 ? name.substr(8) : name;
}

}  // namespace

nlohmann::json EvaluateResponseJson(const v1::EvaluateResponse& r) {
  nlohmann::json j;
  j["status"] = VerdictName(r.verdict());
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
  j["messages"] = nlohmann::json::array();
  for (const auto& m : r.messages()) j["messages"].push_back(m);
  if (r.verdict() == v1::VERDICT_COMPILE_ERROR) j["compile_log"] = r.compile().log();
  return j;
}

int EvalCommand(int argc, char** argv) {
  std::string task_path, candidate_path, backend_name, worker;
  bool json = false;
  ClientOptions client;
  client.timeout = absl::Minutes(10);
  WorkerOptions embedded;
  OptionSet flags("crl eval",
                  "Compiles and verifies a candidate against a task. Exit 0 whenever an\n"
                  "evaluation happened, whatever the verdict; 2 for usage errors; 3 for\n"
                  "infrastructure errors (INFRA_ERROR included).");
  flags.Add("task", &task_path, "task directory (native format)");
  flags.Add("candidate", &candidate_path, "candidate source file");
  flags.Add("backend", &backend_name, "host or cuda (default: the worker's choice)");
  flags.Add("worker", &worker, "HOST:PORT of a crl-worker (default: an in-process worker)");
  flags.Add("json", &json, "print one JSON object");
  BindClientOptions(&flags, &client);
  BindWorkerOptions(&flags, &embedded);
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

  auto source = ReadFile(candidate_path);
  if (!source.ok()) return UsageError(flags, source.status());
  v1::EvaluateRequest request;
  request.mutable_candidate()->set_source(*source);
  request.mutable_candidate()->set_filename(fs::path(candidate_path).filename().string());
  request.mutable_candidate()->set_backend(backend);

  absl::StatusOr<v1::EvaluateResponse> response;
  if (worker.empty()) {
    request.mutable_task()->set_format(v1::TASK_FORMAT_NATIVE);
    request.mutable_task()->set_path(fs::absolute(task_path).string());
    auto rt = BuildWorker(embedded, nullptr);
    if (!rt.ok()) return Fail(rt.status());
    response = (*rt)->engine->Evaluate(request);
  } else {
    auto task = BundleTask(task_path);
    if (!task.ok()) return UsageError(flags, task.status());
    *request.mutable_task() = std::move(*task);
    auto rpc = RpcClient::Create(worker, client);
    if (!rpc.ok()) return Fail(rpc.status());
    auto stub = v1::EvalService::NewStub(rpc->channel());
    grpc::ClientContext context;
    rpc->Prepare(&context);
    v1::EvaluateResponse r;
    grpc::Status status = stub->Evaluate(&context, request, &r);
    if (status.ok()) response = std::move(r);
    else response = FromGrpcStatus(status);
  }
  if (!response.ok()) {
    // Request problems (bad task, bad backend) are usage errors; the rest is infra.
    bool usage = response.status().code() == absl::StatusCode::kInvalidArgument ||
                 response.status().code() == absl::StatusCode::kNotFound;
    std::fprintf(stderr, "crl eval: %s\n", response.status().ToString().c_str());
    return usage ? 2 : 3;
  }
  if (json) {
    std::printf("%s\n", EvaluateResponseJson(*response).dump(2).c_str());
  } else {
    std::printf("%s  %s  (compile %.2fs%s, %d/%d trials, max abs err %.3g, lane %s)\n",
                VerdictName(response->verdict()).c_str(), candidate_path.c_str(),
                response->compile().compile_seconds(),
                response->compile().cache_hit() ? " cached" : "",
                response->correctness().trials_passed(), response->correctness().trials(),
                response->correctness().max_abs_error(), response->lane().c_str());
    for (const auto& m : response->messages()) std::printf("  %s\n", m.c_str());
    if (response->verdict() == v1::VERDICT_COMPILE_ERROR) {
      std::printf("%s\n", response->compile().log().c_str());
    }
  }
  return response->verdict() == v1::VERDICT_INFRA_ERROR ? 3 : 0;
}

}  // namespace crl::cli
