#include "lib/cluster/plan.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <set>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace crl::cluster {
namespace {

namespace fs = std::filesystem;

struct Kind {
  const char* name;
  const char* binary;
  const char* readiness;
};

constexpr Kind kKinds[] = {
    {"worker", "crl-worker", "crl.v1.EvalService"},
    {"prompt", "crl-prompt", "crl.v1.PromptService"},
    {"trainer", "crl-trainer", "crl.v1.TrainerService"},
    {"timing", "crl-timing", "crl.v1.TimingService"},
    {"sampler", "crl-sampler", "crl.v1.SamplerService"},
    {"orchestrator", "crl-orchestrator", "crl.v1.OrchestratorService"},
};

// `program` on PATH (or as given, when it has a slash); empty if absent.
std::string FindProgram(const std::string& program) {
  if (program.find('/') != std::string::npos) return fs::exists(program) ? program : "";
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    const fs::path candidate = fs::path(dirs.substr(start, end - start)) / program;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
    start = end + 1;
  }
  return "";
}

// True when `path` is `dir` or inside it.
bool Under(const std::string& path, const std::string& dir) {
  return path == dir || path.rfind(dir + "/", 0) == 0;
}

}  // namespace

std::string ContainerName(const std::string& name, int grpc_port) {
  return absl::StrCat("crl-", name, "-", grpc_port);
}

const std::vector<std::string>& ServiceNames() {
  static const std::vector<std::string> kNames = [] {
    std::vector<std::string> v;
    for (const auto& k : kKinds) v.push_back(k.name);
    return v;
  }();
  return kNames;
}

absl::Status ParseOverride(const std::string& text,
                           std::map<std::string, std::map<std::string, std::string>>* out) {
  const size_t dot = text.find('.'), eq = text.find('=');
  if (dot == std::string::npos || eq == std::string::npos || dot > eq || dot == 0 || eq == dot + 1) {
    return absl::InvalidArgumentError(absl::StrCat("'", text, "' is not SERVICE.OPTION=VALUE"));
  }
  const std::string service = text.substr(0, dot);
  bool known = false;
  for (const auto& n : ServiceNames()) known = known || n == service;
  if (!known) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", text, "': no service '", service, "' (worker, prompt, trainer, timing, sampler, orchestrator)"));
  }
  (*out)[service][text.substr(dot + 1, eq - dot - 1)] = text.substr(eq + 1);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<ServicePlan>> PlanCluster(const ClusterOptions& o,
                                                     const std::function<absl::StatusOr<int>()>& next_port) {
  // A port found free is handed back to the kernel at once, which may hand
  // it out again for the next one: the quickstart once gave the prompt
  // service's gRPC port to the orchestrator's metrics too (both bound, one
  // on IPv4 and one IPv6-mapped, and the orchestrator reached its own
  // metrics page). Each port of the plan is distinct.
  std::set<int> taken;
  auto free_port = [&]() -> absl::StatusOr<int> {
    for (int attempt = 0; attempt < 64; ++attempt) {
      CRL_ASSIGN_OR_RETURN(int port, next_port());
      if (taken.insert(port).second) return port;
    }
    return absl::UnavailableError("no free port distinct from the plan's others after 64 tries");
  };
  if (o.data_dir.empty()) return absl::InvalidArgumentError("data_dir: required");
  if (o.policy_dir.empty()) return absl::InvalidArgumentError("policy: required (the in-process policy)");
  const std::string data = fs::absolute(o.data_dir).lexically_normal().string();
  const std::string token = data + "/token";
  std::string runtime;
  std::vector<std::string> mounts;  // the host paths services read and write
  if (!o.image.empty() || !o.worker_image.empty()) {
    runtime = FindProgram(o.container_runtime);
    if (runtime.empty()) {
      return absl::FailedPreconditionError(absl::StrCat("container_runtime: '", o.container_runtime,
                                                        "' is not on PATH (image ", o.image, o.worker_image, ")"));
    }
    mounts.push_back(data);
    for (const std::string& dir : {o.policy_dir, o.config_dir}) {
      if (dir.empty()) continue;
      const std::string abs = fs::absolute(dir).lexically_normal().string();
      if (!Under(abs, data)) mounts.push_back(abs);
    }
  }
  std::vector<ServicePlan> plans;
  for (const auto& k : kKinds) {
    ServicePlan p;
    p.name = k.name;
    const bool worker = p.name == "worker";
    const std::string& image = worker ? o.worker_image : o.image;
    const bool contained = !image.empty();
    p.binary = contained ? runtime : (fs::path(o.bin_dir) / k.binary).string();
    if (!contained && !fs::exists(p.binary)) {
      return absl::FailedPreconditionError(absl::StrCat(p.binary, " does not exist (build crl first: make build)"));
    }
    p.readiness = k.readiness;
    p.host = o.host;
    p.log_path = absl::StrCat(data, "/logs/", k.name, ".log");
    CRL_ASSIGN_OR_RETURN(p.grpc_port, free_port());
    if (contained) {
      p.args = {"run", "--rm", "--name=" + ContainerName(p.name, p.grpc_port), "--network=host"};
      // The services as the calling user; the worker as its image's root.
      if (!worker) p.args.push_back(absl::StrCat("--user=", ::getuid(), ":", ::getgid()));
      for (const std::string& m : mounts) {
        p.args.push_back("--volume=" + m + ":" + m + (m == data ? "" : ":ro"));
      }
      p.args.insert(p.args.end(), o.container_args.begin(), o.container_args.end());
      if (worker) p.args.insert(p.args.end(), o.worker_container_args.begin(), o.worker_container_args.end());
      p.args.push_back(image);
      if (!worker) p.args.push_back(k.binary);  // the worker image's entrypoint runs crl-worker
    }
    CRL_ASSIGN_OR_RETURN(p.metrics_port, free_port());
    const std::string config = (fs::path(o.config_dir) / absl::StrCat(k.name, ".yaml")).string();
    if (!o.config_dir.empty() && fs::exists(config)) p.args.push_back("--config=" + config);
    p.args.push_back(absl::StrCat("--listen=", p.address()));
    p.args.push_back(absl::StrCat("--metrics_listen=", o.host, ":", p.metrics_port));
    p.args.push_back("--auth_token_file=" + token);
    plans.push_back(std::move(p));
  }
  auto at = [&](const char* name) -> ServicePlan& {
    for (auto& p : plans) {
      if (p.name == name) return p;
    }
    return plans.front();  // unreachable: every name is planned above
  };
  auto add = [&](const char* name, std::vector<std::string> args) {
    auto& a = at(name).args;
    a.insert(a.end(), args.begin(), args.end());
  };
  add("worker", {"--gpus=", "--cache_dir=" + data + "/worker/cache", "--work_dir=" + data + "/worker/work"});
  add("trainer", {"--model=" + fs::absolute(o.policy_dir).string(), "--out_dir=" + data + "/trainer"});
  add("timing", {"--worker=" + at("worker").address(), "--worker_auth_token_file=" + token});
  CRL_ASSIGN_OR_RETURN(at("sampler").openai_port, free_port());
  add("sampler", {"--policy=" + fs::absolute(o.policy_dir).string(), "--trainer=" + at("trainer").address(),
                  "--trainer_auth_token_file=" + token, "--serve_openai",
                  absl::StrCat("--openai_listen=", o.host, ":", at("sampler").openai_port),
                  "--openai_auth_token_file=" + token});
  add("orchestrator", {"--data_dir=" + data + "/orchestrator", "--prompt=" + at("prompt").address(),
                       "--sampler=" + at("sampler").address(), "--timing=" + at("timing").address(), "--trainer=" + at("trainer").address(),
                       "--upstream_auth_token_file=" + token,
                       // One machine: the trainer's steps would share the
                       // cores that host timing measures on.
                       "--train_after_scoring"});
  for (const auto& [service, options] : o.overrides) {
    bool known = false;
    for (const auto& p : plans) known = known || p.name == service;
    if (!known) return absl::InvalidArgumentError(absl::StrCat("overrides: no service '", service, "'"));
    for (const auto& [key, value] : options) add(service.c_str(), {absl::StrCat("--", key, "=", value)});
  }
  return plans;
}

}  // namespace crl::cluster
