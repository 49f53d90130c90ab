// A local cluster for the CLI (`crl up`, `crl down`, `crl status`,
// `crl quickstart`): the six services as processes on loopback, supervised
// by a daemon that `crl up` forks (lib/cluster), with a generated bearer
// token, logs under <data_dir>/logs and cluster.json saying where everything
// is. The embedded policy is made on first use: a tokenizer trained on the
// project's own corpus and a randomly initialised model (crl-policy).
#ifndef CRL_SERVICES_CLI_LOCAL_CLUSTER_H_
#define CRL_SERVICES_CLI_LOCAL_CLUSTER_H_

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/client.h"

namespace crl::cli {

struct LocalClusterOptions {
  std::string data_dir = "runs/cluster";
  // Per-service config files (default: the chart's, deploy/helm/crl/config).
  std::string config_dir;
  // The starting policy; empty: <data_dir>/policy, the embedded one, made
  // when absent.
  std::string policy_dir;
  // service -> option -> value (from --set and --overlay files).
  std::map<std::string, std::map<std::string, std::string>> overrides;
  std::string host = "127.0.0.1";
  absl::Duration ready_timeout = absl::Minutes(3);
  // Run every service but the worker from this image (cluster::ClusterOptions).
  std::string image;
  std::string worker_image;
  std::string container_runtime = "podman";
  std::vector<std::string> container_args;
  std::vector<std::string> worker_container_args;
};

// Reads an overlay file ({service: {option: value}}) into `overrides`.
absl::Status LoadOverlay(const std::string& path, std::map<std::string, std::map<std::string, std::string>>* overrides);

// Makes the embedded policy in `dir` unless it holds one: a byte-level BPE
// tokenizer trained on the shipped tasks, candidates, prompt templates and
// kernel ABI, and models/embedded/config.json initialised with `seed`.
absl::Status PrepareEmbeddedPolicy(const std::string& dir, uint64_t seed);

// Starts the cluster (forks the supervising daemon) and returns cluster.json
// once every service is ready. ALREADY_EXISTS when one is up in data_dir.
absl::StatusOr<nlohmann::json> StartLocalCluster(const LocalClusterOptions& options);
// Runs the supervisor in this process until SIGTERM/SIGINT (crl up --foreground).
absl::Status RunLocalClusterForeground(const LocalClusterOptions& options);
// Stops the cluster in data_dir (SIGTERM to its supervisor) and waits.
absl::Status StopLocalCluster(const std::string& data_dir, absl::Duration timeout = absl::Minutes(2));
// For a command that starts a cluster and must not leave it behind (crl
// quickstart): from now on SIGINT, SIGTERM or SIGHUP stops the cluster in
// data_dir (or the supervisor StartLocalCluster forked, if it is not up yet),
// then ends the process with 128 + the signal. Call once per process.
void StopLocalClusterOnSignal(const std::string& data_dir);
// cluster.json of a running cluster; NOT_FOUND when none is up there.
absl::StatusOr<nlohmann::json> ReadLocalCluster(const std::string& data_dir);
// Client options that carry the cluster's token.
ClientOptions LocalClusterClient(const nlohmann::json& cluster);
// --cluster DIR of a client command: the cluster's orchestrator address, and
// its token unless `client` already names one.
absl::Status UseLocalClusterOrchestrator(const std::string& data_dir, std::string* address, ClientOptions* client);

}  // namespace crl::cli

#endif  // CRL_SERVICES_CLI_LOCAL_CLUSTER_H_
