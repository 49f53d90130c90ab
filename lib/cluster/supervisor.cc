#include "lib/cluster/supervisor.h"

#include <signal.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/backoff.h"

namespace crl::cluster {
namespace {

std::string ExitText(int status) {
  return status < 0 ? absl::StrCat("signal ", -status) : absl::StrCat("exit ", status);
}

}  // namespace

Supervisor::Supervisor(std::vector<ServicePlan> plans, ProcessLauncherInterface* launcher, ClockInterface* clock,
                       Probe probe, Log log, SupervisorOptions options)
    : launcher_(launcher), clock_(clock), probe_(std::move(probe)), log_(std::move(log)), options_(options) {
  for (auto& p : plans) {
    ServiceState s;
    s.plan = std::move(p);
    states_.push_back(std::move(s));
  }
}

absl::Duration Supervisor::Backoff(int restarts) const {
  return crl::Backoff::Nth(options_.initial_backoff, options_.max_backoff, std::max(0, restarts - 1));
}

absl::Status Supervisor::StartOne(ServiceState& s) {
  std::vector<std::string> argv = {s.plan.binary};
  argv.insert(argv.end(), s.plan.args.begin(), s.plan.args.end());
  auto pid = launcher_->Start(argv, s.plan.log_path);
  if (!pid.ok()) return pid.status();
  s.pid = *pid;
  s.ready = false;
  s.started = clock_->MonotonicNow();
  return absl::OkStatus();
}

absl::Status Supervisor::StartAll() {
  for (auto& s : states_) {
    absl::Status st = StartOne(s);
    const absl::Time deadline = clock_->MonotonicNow() + options_.ready_timeout;
    while (st.ok() && !s.ready) {
      if (auto exited = launcher_->Poll(s.pid)) {
        s.pid = -1;
        st = absl::UnavailableError(absl::StrCat(s.plan.binary, " exited (", ExitText(*exited),
                                                 ") while starting; see ", s.plan.log_path));
        break;
      }
      if (probe_(s.plan)) {
        s.ready = true;
        if (log_) log_(absl::StrCat(s.plan.name, " ready on ", s.plan.address(), " (pid ", s.pid, ")"));
        break;
      }
      if (clock_->MonotonicNow() >= deadline) {
        st = absl::DeadlineExceededError(absl::StrCat(s.plan.name, " was not ready after ",
                                                      absl::FormatDuration(options_.ready_timeout), "; see ",
                                                      s.plan.log_path));
        break;
      }
      clock_->SleepFor(options_.poll);
    }
    if (!st.ok()) {
      StopAll();
      return st;
    }
  }
  return absl::OkStatus();
}

bool Supervisor::Tick() {
  bool changed = false;
  const absl::Time now = clock_->MonotonicNow();
  for (auto& s : states_) {
    if (s.pid > 0) {
      if (auto exited = launcher_->Poll(s.pid)) {
        // A service that stayed up long enough starts its back-off again.
        if (now - s.started >= options_.stable_after) s.restarts = 0;
        ++s.restarts;
        s.last_exit = ExitText(*exited);
        s.pid = -1;
        s.ready = false;
        s.restart_at = now + Backoff(s.restarts);
        if (log_) {
          log_(absl::StrCat(s.plan.name, " exited (", s.last_exit, "); restart ", s.restarts, " in ",
                            absl::FormatDuration(Backoff(s.restarts))));
        }
        changed = true;
      } else if (!s.ready && probe_(s.plan)) {
        s.ready = true;
        if (log_) log_(absl::StrCat(s.plan.name, " ready again (pid ", s.pid, ")"));
        changed = true;
      }
    } else if (now >= s.restart_at) {
      absl::Status st = StartOne(s);
      if (!st.ok()) {
        s.restart_at = now + Backoff(++s.restarts);
        if (log_) log_(absl::StrCat(s.plan.name, ": cannot restart: ", st.ToString()));
      } else if (log_) {
        log_(absl::StrCat(s.plan.name, " restarted (pid ", s.pid, ")"));
      }
      changed = true;
    }
  }
  return changed;
}

void Supervisor::StopAll() {
  for (auto it = states_.rbegin(); it != states_.rend(); ++it) {
    ServiceState& s = *it;
    if (s.pid <= 0) continue;
    launcher_->Signal(s.pid, SIGTERM);
    const absl::Time deadline = clock_->MonotonicNow() + options_.stop_grace;
    std::optional<int> exited;
    while (!(exited = launcher_->Poll(s.pid)) && clock_->MonotonicNow() < deadline) clock_->SleepFor(options_.poll);
    if (!exited) {
      if (log_) log_(absl::StrCat(s.plan.name, " did not stop in ", absl::FormatDuration(options_.stop_grace),
                                  "; SIGKILL"));
      launcher_->Signal(s.pid, SIGKILL);
      while (!launcher_->Poll(s.pid)) clock_->SleepFor(options_.poll);
    }
    if (log_) log_(absl::StrCat(s.plan.name, " stopped"));
    s.pid = -1;
    s.ready = false;
  }
}

nlohmann::json ClusterJson(pid_t supervisor, const std::string& data_dir, const std::vector<ServiceState>& states) {
  nlohmann::json services = nlohmann::json::object();
  for (const auto& s : states) {
    nlohmann::json j = {{"address", s.plan.address()},
                        {"metrics", absl::StrCat(s.plan.host, ":", s.plan.metrics_port)},
                        {"pid", s.pid},
                        {"ready", s.ready},
                        {"restarts", s.restarts},
                        {"last_exit", s.last_exit},
                        {"log", s.plan.log_path}};
    if (s.plan.openai_port > 0) j["openai"] = absl::StrCat("http://", s.plan.host, ":", s.plan.openai_port, "/v1");
    services[s.plan.name] = j;
  }
  return {{"supervisor_pid", supervisor},
          {"data_dir", data_dir},
          {"token_file", data_dir + "/token"},
          {"services", services}};
}

}  // namespace crl::cluster
