// What a local cluster runs (`crl up`): the six services as separate
// processes on one host, each with its per-service config file (the same
// files the Helm chart renders: deploy/helm/crl/config/<name>.yaml) and the
// flags that wire it to the others — addresses, the cluster's bearer token,
// data directories, the starting policy. Flags win over the files;
// `overrides` win over both.
#ifndef CRL_LIB_CLUSTER_PLAN_H_
#define CRL_LIB_CLUSTER_PLAN_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace crl::cluster {

struct ServicePlan {
  std::string name;       // "worker"
  std::string binary;     // absolute path of crl-worker
  std::string readiness;  // grpc.health.v1 name that turns SERVING once warm
  std::vector<std::string> args;  // after the binary
  std::string log_path;
  std::string host;
  int grpc_port = 0;
  int metrics_port = 0;
  int openai_port = 0;  // the sampler's OpenAI HTTP API (0: none)
  std::string address() const { return host + ":" + std::to_string(grpc_port); }
};

struct ClusterOptions {
  // Everything the cluster writes: token, logs/, orchestrator/ (the store),
  // trainer/ (checkpoints, published policies), worker/ (build cache).
  std::string data_dir;
  // Where crl-orchestrator, crl-worker, ... are.
  std::string bin_dir;
  // <name>.yaml per service; a missing file means the binary's defaults.
  std::string config_dir;
  // The policy the in-process sampler serves and the trainer trains.
  std::string policy_dir;
  std::string host = "127.0.0.1";
  // service name -> option -> value, on top of everything else.
  std::map<std::string, std::map<std::string, std::string>> overrides;
  // When set, every service but the worker runs from this container image
  // (docker/Dockerfile.services: the binaries on its PATH) through
  // `container_runtime` (podman or docker, found on PATH): on the host's
  // network, as the calling user, with data_dir, the policy and config_dir
  // mounted at their own paths; `container_args` go before the image (for
  // example --runtime=runc). Stopping the runtime's process stops the
  // container (its signal proxy), and --rm removes it. The worker stays a
  // host process (the services image has none) unless `worker_image` names
  // a worker image (docker/Dockerfile.worker-cpu: its entrypoint runs
  // crl-worker, as root for the sandbox), run the same way with
  // `worker_container_args` added (its sandbox needs --privileged or the
  // chart's userns settings).
  std::string image;
  std::string worker_image;
  std::string container_runtime = "podman";
  std::vector<std::string> container_args;
  std::vector<std::string> worker_container_args;
};

// The name of the container a plan runs service `name` in (so that a
// supervisor's crash can be cleaned up): crl-<name>-<grpc port>.
std::string ContainerName(const std::string& name, int grpc_port);

// The services in start order: worker, prompt, trainer, timing, sampler,
// orchestrator (each after the ones it calls).
const std::vector<std::string>& ServiceNames();

// The plan. `free_port` gives each listening port (asked again while it
// repeats one the plan already has). Errors name the option.
absl::StatusOr<std::vector<ServicePlan>> PlanCluster(const ClusterOptions& options,
                                                     const std::function<absl::StatusOr<int>()>& free_port);

// "trainer.lr=0.002" -> overrides["trainer"]["lr"] = "0.002". Errors name the text.
absl::Status ParseOverride(const std::string& text, std::map<std::string, std::map<std::string, std::string>>* out);

}  // namespace crl::cluster

#endif  // CRL_LIB_CLUSTER_PLAN_H_
