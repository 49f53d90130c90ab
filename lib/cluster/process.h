// Starting and watching the processes of a local cluster: an interface
// (the supervisor's seam), the POSIX implementation, and a fake beside it
// (fake_process_launcher.h) for tests without processes.
#ifndef CRL_LIB_CLUSTER_PROCESS_H_
#define CRL_LIB_CLUSTER_PROCESS_H_

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace crl::cluster {

class ProcessLauncherInterface {
 public:
  virtual ~ProcessLauncherInterface() = default;
  // Starts argv[0] with argv, stdout and stderr appended to `log_path`.
  // Returns its pid.
  virtual absl::StatusOr<pid_t> Start(const std::vector<std::string>& argv, const std::string& log_path) = 0;
  // The exit status of an ended process (reaped): the exit code, or minus
  // the signal that killed it; nullopt while it runs.
  virtual std::optional<int> Poll(pid_t pid) = 0;
  virtual void Signal(pid_t pid, int signal) = 0;
};

// fork/exec. A child gets SIGTERM when the process that started it dies
// (so a supervisor killed with -9 leaves no orphans), its own process
// group, and /dev/null as stdin. Thread-compatible.
class PosixLauncher final : public ProcessLauncherInterface {
 public:
  absl::StatusOr<pid_t> Start(const std::vector<std::string>& argv, const std::string& log_path) override;
  std::optional<int> Poll(pid_t pid) override;
  void Signal(pid_t pid, int signal) override;
};

// Whether `pid` names a live process (signal 0).
bool ProcessAlive(pid_t pid);

// A free TCP port on `host` (bound and released; the caller uses it soon).
absl::StatusOr<int> FreePort(const std::string& host);

}  // namespace crl::cluster

#endif  // CRL_LIB_CLUSTER_PROCESS_H_
