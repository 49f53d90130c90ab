// Keeps a local cluster's processes running: starts them in order (each
// ready before the next starts), restarts any that exits with a doubling
// back-off, and stops them in reverse order (SIGTERM, then SIGKILL after a
// grace period). Time and processes are injected, so tests run without
// either. Not thread-safe: one supervising thread calls it.
#ifndef CRL_LIB_CLUSTER_SUPERVISOR_H_
#define CRL_LIB_CLUSTER_SUPERVISOR_H_

#include <sys/types.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "lib/cluster/plan.h"
#include "lib/cluster/process.h"

namespace crl::cluster {

struct SupervisorOptions {
  // How long a service may take to turn ready when the cluster starts.
  absl::Duration ready_timeout = absl::Seconds(120);
  absl::Duration poll = absl::Milliseconds(100);
  // Restart back-off: doubles per restart, back to the start after a
  // service stayed up for `stable_after`.
  absl::Duration initial_backoff = absl::Seconds(1);
  absl::Duration max_backoff = absl::Seconds(30);
  absl::Duration stable_after = absl::Seconds(60);
  // SIGTERM to SIGKILL when stopping.
  absl::Duration stop_grace = absl::Seconds(30);
};

struct ServiceState {
  ServicePlan plan;
  pid_t pid = -1;  // -1: not running (waiting to restart)
  bool ready = false;
  int restarts = 0;
  std::string last_exit;  // "exit 1", "signal 9"
  absl::Time started;     // monotonic
  absl::Time restart_at;  // monotonic, when pid == -1
};

class Supervisor {
 public:
  // Whether a running service answers its readiness check.
  using Probe = std::function<bool(const ServicePlan&)>;
  // Told of each start, exit and restart ("crl-worker exited (signal 9);
  // restart 1 in 1s"), for the supervisor's log.
  using Log = std::function<void(const std::string&)>;

  Supervisor(std::vector<ServicePlan> plans, ProcessLauncherInterface* launcher, ClockInterface* clock,
             Probe probe, Log log, SupervisorOptions options = {});

  // Starts every service in order, each ready before the next. An error
  // names the service and its log; what was started is stopped again.
  absl::Status StartAll();
  // One pass: notes exits, restarts what is due, probes what is not ready.
  // Returns true when a state changed.
  bool Tick();
  // Stops every service in reverse order.
  void StopAll();

  const std::vector<ServiceState>& states() const { return states_; }

 private:
  absl::Status StartOne(ServiceState& s);
  absl::Duration Backoff(int restarts) const;

  ProcessLauncherInterface* launcher_;
  ClockInterface* clock_;
  Probe probe_;
  Log log_;
  SupervisorOptions options_;
  std::vector<ServiceState> states_;
};

// cluster.json: the supervisor's pid, the data directory and each
// service's addresses, pid, readiness and restarts.
nlohmann::json ClusterJson(pid_t supervisor, const std::string& data_dir, const std::vector<ServiceState>& states);

}  // namespace crl::cluster

#endif  // CRL_LIB_CLUSTER_SUPERVISOR_H_
