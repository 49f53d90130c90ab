// A ProcessLauncherInterface for tests: "processes" are records; a test
// ends one with Exit(pid, status), and SIGTERM/SIGKILL end them unless a
// test made them ignore SIGTERM. Not thread-safe.
#ifndef CRL_LIB_CLUSTER_FAKE_PROCESS_LAUNCHER_H_
#define CRL_LIB_CLUSTER_FAKE_PROCESS_LAUNCHER_H_

#include <signal.h>

#include <map>
#include <string>
#include <vector>

#include "lib/cluster/process.h"

namespace crl::cluster {

class FakeLauncher final : public ProcessLauncherInterface {
 public:
  struct Record {
    std::vector<std::string> argv;
    std::string log_path;
    std::optional<int> exit;
    std::vector<int> signals;
  };

  absl::StatusOr<pid_t> Start(const std::vector<std::string>& argv, const std::string& log_path) override {
    const pid_t pid = next_pid_++;
    processes_[pid] = Record{argv, log_path, std::nullopt, {}};
    started_.push_back(pid);
    return pid;
  }
  std::optional<int> Poll(pid_t pid) override { return processes_.at(pid).exit; }
  void Signal(pid_t pid, int signal) override {
    Record& r = processes_.at(pid);
    r.signals.push_back(signal);
    if (r.exit) return;
    if (signal == SIGKILL || (signal == SIGTERM && !ignore_term_)) r.exit = -signal;
  }

  void Exit(pid_t pid, int status) { processes_.at(pid).exit = status; }
  void IgnoreSigterm(bool ignore) { ignore_term_ = ignore; }
  const Record& record(pid_t pid) const { return processes_.at(pid); }
  // Pids in start order.
  const std::vector<pid_t>& started() const { return started_; }

 private:
  pid_t next_pid_ = 100;
  bool ignore_term_ = false;
  std::map<pid_t, Record> processes_;
  std::vector<pid_t> started_;
};

}  // namespace crl::cluster

#endif  // CRL_LIB_CLUSTER_FAKE_PROCESS_LAUNCHER_H_
