// crl up / crl down / crl status: a local cluster (local_cluster.h).
//
//   crl up [--data_dir runs/cluster] [--config DIR] [--policy DIR] [--overlay FILE] [--set svc.opt=v,...]
//          [--image crl/services:TAG] [--worker_image crl/worker-cpu:TAG [--worker_container_args a,b]]
//          [--container_runtime podman] [--container_args a,b]
//          [--foreground]
//   crl status [--data_dir runs/cluster] [--json]
//   crl down [--data_dir runs/cluster]
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "lib/cluster/plan.h"
#include "services/cli/commands.h"
#include "services/cli/local_cluster.h"

namespace crl::cli {
namespace {

void PrintCluster(const nlohmann::json& j) {
  std::printf("cluster in %s (supervisor pid %d), token %s\n", j.value("data_dir", "").c_str(),
              j.value("supervisor_pid", 0), j.value("token_file", "").c_str());
  for (const auto& [name, s] : j["services"].items()) {
    std::printf("  %-13s %-21s metrics %-21s pid %-7d %s%s\n", name.c_str(), s.value("address", "").c_str(),
                s.value("metrics", "").c_str(), s.value("pid", -1), s.value("ready", false) ? "ready" : "NOT READY",
                s.value("restarts", 0) > 0 ? absl::StrCat(", restarts ", s.value("restarts", 0), " (last ",
                                                          s.value("last_exit", ""), ")").c_str()
                                           : "");
    if (s.contains("openai")) std::printf("  %-13s %s (OpenAI API of the policy)\n", "", s.value("openai", "").c_str());
  }
}

}  // namespace

int UpCommand(int argc, char** argv) {
  LocalClusterOptions o;
  std::vector<std::string> sets;
  std::string overlay;
  bool foreground = false;
  OptionSet flags("crl up",
                  "Starts a local cluster: orchestrator, prompt, sampler, trainer, worker (host backend) and timing as "
                  "separate processes on loopback, supervised (restarted when they exit), with a generated token; "
                  "logs and state under --data_dir. `crl down` stops it.");
  flags.Add("data_dir", &o.data_dir, "where the cluster keeps its token, logs, store and checkpoints");
  flags.Add("config", &o.config_dir, "per-service config files <name>.yaml (default: the Helm chart's)");
  flags.Add("policy", &o.policy_dir, "the starting policy (default: the embedded one, made in <data_dir>/policy)");
  flags.Add("overlay", &overlay, "a YAML file {service: {option: value}} applied over the config files");
  flags.Add("set", &sets, "SERVICE.OPTION=VALUE overrides (after --overlay)");
  flags.Add("host", &o.host, "the loopback address the services listen on");
  flags.Add("foreground", &foreground, "supervise in this process until Ctrl-C");
  flags.Add("image", &o.image,
            "run every service but the worker from this services image (docker/Dockerfile.services), on the host's "
            "network, with the data, policy and config directories mounted at their own paths");
  flags.Add("worker_image", &o.worker_image,
            "run the worker from this worker image (docker/Dockerfile.worker-cpu), as its root");
  flags.Add("container_runtime", &o.container_runtime, "with --image or --worker_image: podman or docker");
  flags.Add("container_args", &o.container_args,
            "with --image or --worker_image: more arguments for `RUNTIME run`, comma-separated (e.g. --runtime=runc)");
  flags.Add("worker_container_args", &o.worker_container_args,
            "with --worker_image: arguments for the worker's container only (its sandbox needs --privileged or "
            "the chart's userns settings)");
  std::vector<std::string> args;
  absl::Status parsed = flags.Parse(argc, argv, &args);
  if (parsed.ok() && !overlay.empty()) parsed = LoadOverlay(overlay, &o.overrides);
  for (const auto& s : sets) {
    if (parsed.ok()) parsed = cluster::ParseOverride(s, &o.overrides);
  }
  if (parsed.ok() && !args.empty()) parsed = absl::InvalidArgumentError("crl up takes no arguments");
  if (!parsed.ok() || flags.help_requested()) return UsageError(flags, parsed);
  if (foreground) {
    absl::Status s = RunLocalClusterForeground(o);
    return s.ok() ? 0 : Fail(s);
  }
  std::printf("starting the cluster in %s (first start: the embedded policy is made, a few seconds)...\n",
              o.data_dir.c_str());
  std::fflush(stdout);
  auto j = StartLocalCluster(o);
  if (!j.ok()) return Fail(j.status());
  PrintCluster(*j);
  std::printf("submit runs with: crl run submit SPEC.yaml --cluster %s --watch\n", o.data_dir.c_str());
  return 0;
}

int DownCommand(int argc, char** argv) {
  std::string data_dir = "runs/cluster";
  OptionSet flags("crl down", "Stops the local cluster `crl up` started (SIGTERM to its supervisor; it drains every "
                              "service, newest first).");
  flags.Add("data_dir", &data_dir, "the cluster's directory");
  std::vector<std::string> args;
  absl::Status parsed = flags.Parse(argc, argv, &args);
  if (!parsed.ok() || flags.help_requested()) return UsageError(flags, parsed);
  absl::Status s = StopLocalCluster(data_dir);
  if (!s.ok()) return s.code() == absl::StatusCode::kNotFound ? (std::fprintf(stderr, "%s\n", std::string(s.message()).c_str()), 1)
                                                              : Fail(s);
  std::printf("cluster in %s stopped\n", data_dir.c_str());
  return 0;
}

int StatusCommand(int argc, char** argv) {
  std::string data_dir = "runs/cluster";
  bool json = false;
  OptionSet flags("crl status", "The local cluster's services: addresses, pids, readiness, restarts. Exit 1 when "
                                "none is up.");
  flags.Add("data_dir", &data_dir, "the cluster's directory");
  flags.Add("json", &json, "print cluster.json");
  std::vector<std::string> args;
  absl::Status parsed = flags.Parse(argc, argv, &args);
  if (!parsed.ok() || flags.help_requested()) return UsageError(flags, parsed);
  auto j = ReadLocalCluster(data_dir);
  if (!j.ok()) {
    std::fprintf(stderr, "%s\n", std::string(j.status().message()).c_str());
    return 1;
  }
  if (json) {
    std::printf("%s\n", j->dump(2).c_str());
  } else {
    PrintCluster(*j);
  }
  return 0;
}

}  // namespace crl::cli
