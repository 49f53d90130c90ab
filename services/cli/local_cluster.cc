#include "services/cli/local_cluster.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/clock.h"
#include "common/file.h"
#include "common/paths.h"
#include "common/status.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "lib/cluster/plan.h"
#include "lib/cluster/process.h"
#include "lib/cluster/supervisor.h"

namespace crl::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The supervisor this process forked (StartLocalCluster), for
// StopLocalClusterOnSignal: it can be stopped before its cluster.json is up.
std::atomic<pid_t> g_forked_supervisor{0};
// StopLocalClusterOnSignal's self-pipe: the handler writes the signal's
// number, a thread reads it and does the rest.
int g_signal_pipe[2] = {-1, -1};

void OnStopSignal(int sig) {
  const unsigned char b = static_cast<unsigned char>(sig);
  const int saved = errno;
  if (::write(g_signal_pipe[1], &b, 1) < 0) {
  }
  errno = saved;
}

std::string ClusterFile(const std::string& data_dir) { return (fs::path(data_dir) / "cluster.json").string(); }

absl::Status WriteJsonAtomically(const std::string& path, const json& j) {
  const std::string tmp = path + ".tmp";
  CRL_RETURN_IF_ERROR(WriteStringToFile(tmp, j.dump(2) + "\n"));
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return absl::UnavailableError(absl::StrCat(path, ": ", ec.message()));
  return absl::OkStatus();
}

// Runs a tool to its end; its output goes to `log`.
absl::Status RunTool(const std::vector<std::string>& argv, const std::string& log) {
  cluster::PosixLauncher launcher;
  CRL_ASSIGN_OR_RETURN(pid_t pid, launcher.Start(argv, log));
  std::optional<int> status;
  while (!(status = launcher.Poll(pid))) absl::SleepFor(absl::Milliseconds(50));
  if (*status != 0) {
    return absl::InternalError(absl::StrCat(fs::path(argv[0]).filename().string(), " ", argv.size() > 2 ? argv[2] : "",
                                            " failed (", *status < 0 ? "signal " : "exit ", std::abs(*status),
                                            "); see ", log));
  }
  return absl::OkStatus();
}

std::string RandomToken() {
  std::random_device rd;
  std::string t;
  static const char* kHex = "0123456789abcdef";
  for (int i = 0; i < 48; ++i) t += kHex[rd() % 16];
  return t;
}

bool Ready(const cluster::ServicePlan& p, const std::string& token_file) {
  ClientOptions o;
  o.auth_token_file = token_file;
  o.timeout = absl::Seconds(2);
  auto rpc = RpcClient::Create(p.address(), o);
  if (!rpc.ok()) return false;
  auto stub = grpc::health::v1::Health::NewStub(rpc->channel());
  grpc::ClientContext context;
  rpc->Prepare(&context);
  grpc::health::v1::HealthCheckRequest req;
  req.set_service(p.readiness);
  grpc::health::v1::HealthCheckResponse resp;
  return stub->Check(&context, req, &resp).ok() && resp.status() == grpc::health::v1::HealthCheckResponse::SERVING;
}

absl::StatusOr<std::vector<cluster::ServicePlan>> Plan(const LocalClusterOptions& o) {
  cluster::ClusterOptions co;
  co.data_dir = o.data_dir;
  co.bin_dir = ExecutableDir();
  co.config_dir = o.config_dir.empty() ? FindShippedDir("deploy/helm/crl/config") : o.config_dir;
  co.policy_dir = o.policy_dir;
  if (co.policy_dir.empty()) {
    co.policy_dir = (fs::path(o.data_dir) / "policy").string();
    CRL_RETURN_IF_ERROR(PrepareEmbeddedPolicy(co.policy_dir, 1));
  }
  co.host = o.host;
  co.overrides = o.overrides;
  co.image = o.image;
  co.container_runtime = o.container_runtime;
  co.container_args = o.container_args;
  co.worker_image = o.worker_image;
  co.worker_container_args = o.worker_container_args;
  return cluster::PlanCluster(co, [&] { return cluster::FreePort(o.host); });
}

// The supervising loop (the daemon's, or crl up --foreground's): returns the
// process's exit code. SIGTERM and SIGINT must be blocked in every thread.
int Supervise(std::vector<cluster::ServicePlan> plans, const std::string& data_dir) {
  const std::string data = fs::absolute(data_dir).string();
  const std::string token = data + "/token";
  auto log = [](const std::string& line) {
    std::printf("%s %s\n", absl::FormatTime("%Y-%m-%dT%H:%M:%S", absl::Now(), absl::UTCTimeZone()).c_str(),
                line.c_str());
    std::fflush(stdout);
  };
  cluster::PosixLauncher launcher;
  cluster::Supervisor sup(
      std::move(plans), &launcher, RealClock::Get(), [&](const cluster::ServicePlan& p) { return Ready(p, token); },
      log);
  const std::string file = ClusterFile(data);
  absl::Status started = sup.StartAll();
  if (!started.ok()) {
    log(absl::StrCat("cannot start the cluster: ", started.ToString()));
    (void)WriteJsonAtomically(file, {{"supervisor_pid", ::getpid()}, {"error", started.ToString()}});
    return 1;
  }
  json j = cluster::ClusterJson(::getpid(), data, sup.states());
  j["ready"] = true;
  (void)WriteJsonAtomically(file, j);
  log(absl::StrCat("cluster up: ", file));
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  const timespec tick{0, 200 * 1000 * 1000};
  for (;;) {
    const int sig = sigtimedwait(&stop, nullptr, &tick);
    if (sig == SIGTERM || sig == SIGINT) break;
    if (sup.Tick()) {
      j = cluster::ClusterJson(::getpid(), data, sup.states());
      j["ready"] = true;
      (void)WriteJsonAtomically(file, j);
    }
  }
  log("stopping");
  sup.StopAll();
  std::error_code ec;
  fs::remove(file, ec);
  log("cluster down");
  return 0;
}

absl::Status PrepareDataDir(const std::string& data_dir) {
  std::error_code ec;
  fs::create_directories(fs::path(data_dir) / "logs", ec);
  if (ec) return absl::FailedPreconditionError(absl::StrCat("data_dir: cannot create ", data_dir, ": ", ec.message()));
  const std::string token = (fs::path(data_dir) / "token").string();
  if (!fs::exists(token)) {
    CRL_RETURN_IF_ERROR(WriteStringToFile(token, RandomToken() + "\n"));
    fs::permissions(token, fs::perms::owner_read | fs::perms::owner_write, ec);
  }
  return absl::OkStatus();
}

void BlockStopSignals() {
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  sigprocmask(SIG_BLOCK, &stop, nullptr);
}

}  // namespace

absl::Status LoadOverlay(const std::string& path,
                         std::map<std::string, std::map<std::string, std::string>>* overrides) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", e.what()));
  }
  if (!root.IsMap()) return absl::InvalidArgumentError(absl::StrCat(path, ": a map of service: {option: value}"));
  for (const auto& service : root) {
    const std::string name = service.first.as<std::string>();
    if (!service.second.IsMap()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ":", service.first.Mark().line + 1, ": ", name,
                                                     ": a map of option: value"));
    }
    for (const auto& kv : service.second) {
      std::string value;
      if (kv.second.IsSequence()) {
        std::vector<std::string> items;
        for (const auto& x : kv.second) items.push_back(x.as<std::string>());
        value = absl::StrJoin(items, ",");
      } else {
        value = kv.second.as<std::string>();
      }
      CRL_RETURN_IF_ERROR(cluster::ParseOverride(absl::StrCat(name, ".", kv.first.as<std::string>(), "=", value),
                                                 overrides));
    }
  }
  return absl::OkStatus();
}

absl::Status PrepareEmbeddedPolicy(const std::string& dir, uint64_t seed) {
  if (fs::exists(fs::path(dir) / "config.json") && fs::exists(fs::path(dir) / "model.safetensors")) {
    return absl::OkStatus();
  }
  const std::string tool = ExecutableDir() + "/crl-policy";
  if (!fs::exists(tool)) return absl::FailedPreconditionError(tool + " does not exist (it is built with LibTorch)");
  const std::string config = FindShippedDir("models/embedded");
  if (config.empty()) return absl::FailedPreconditionError("models/embedded: not found beside crl");
  // The corpus: what the model will read and write.
  const fs::path work = fs::path(dir).string() + ".build";
  std::error_code ec;
  fs::remove_all(work, ec);
  fs::create_directories(work / "corpus", ec);
  if (ec) return absl::FailedPreconditionError(absl::StrCat(work.string(), ": ", ec.message()));
  int n = 0;
  for (const auto& [from, exts] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"tasks/native", {".cc", ".cu", ".yaml"}}, {"prompts", {".tmpl"}}, {"include/crl", {".h"}}}) {
    const std::string root = FindShippedDir(from);
    if (root.empty()) return absl::FailedPreconditionError(absl::StrCat(from, ": not found beside crl"));
    for (const auto& e : fs::recursive_directory_iterator(root)) {
      if (!e.is_regular_file() ||
          std::find(exts.begin(), exts.end(), e.path().extension().string()) == exts.end()) {
        continue;
      }
      fs::copy_file(e.path(), work / "corpus" / absl::StrCat(n++, "_", e.path().filename().string()), ec);
    }
  }
  const std::string log = (work / "policy.log").string();
  const std::string tokenizer = (work / "tokenizer" / "tokenizer.json").string();
  CRL_RETURN_IF_ERROR(RunTool({tool, "policy", "tokenizer-train", "--corpus", (work / "corpus").string(), "--vocab",
                               "4096", "--out", tokenizer},
                              log));
  CRL_RETURN_IF_ERROR(RunTool({tool, "policy", "init", "--config", config + "/config.json", "--out",
                               (work / "policy").string(), "--tokenizer", tokenizer, "--seed", std::to_string(seed)},
                              log));
  fs::rename(work / "policy", dir, ec);
  if (ec) return absl::UnavailableError(absl::StrCat(dir, ": ", ec.message()));
  fs::remove_all(work, ec);
  return absl::OkStatus();
}

absl::StatusOr<json> ReadLocalCluster(const std::string& data_dir) {
  const std::string file = ClusterFile(data_dir);
  auto text = ReadFileToString(file, "cluster.json");
  if (!text.ok()) return absl::NotFoundError(absl::StrCat("no cluster is up in ", data_dir, " (no ", file, ")"));
  json j = json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.contains("supervisor_pid")) {
    return absl::DataLossError(absl::StrCat(file, ": not a cluster file"));
  }
  const pid_t pid = j["supervisor_pid"].get<pid_t>();
  if (!cluster::ProcessAlive(pid)) {
    return absl::NotFoundError(absl::StrCat("no cluster is up in ", data_dir, " (its supervisor, pid ", pid,
                                            ", is gone; ", file, " is stale)"));
  }
  return j;
}

ClientOptions LocalClusterClient(const json& cluster) {
  ClientOptions o;
  o.auth_token_file = cluster.value("token_file", "");
  return o;
}

absl::Status UseLocalClusterOrchestrator(const std::string& data_dir, std::string* address, ClientOptions* client) {
  CRL_ASSIGN_OR_RETURN(json up, ReadLocalCluster(data_dir));
  *address = up["services"]["orchestrator"]["address"].get<std::string>();
  if (client->auth_token_file.empty()) client->auth_token_file = LocalClusterClient(up).auth_token_file;
  return absl::OkStatus();
}

absl::StatusOr<json> StartLocalCluster(const LocalClusterOptions& o) {
  if (auto up = ReadLocalCluster(o.data_dir); up.ok()) {
    return absl::AlreadyExistsError(absl::StrCat("a cluster is already up in ", o.data_dir, " (supervisor pid ",
                                                 (*up)["supervisor_pid"].get<int>(), "); crl down --data_dir ",
                                                 o.data_dir));
  }
  CRL_RETURN_IF_ERROR(PrepareDataDir(o.data_dir));
  CRL_ASSIGN_OR_RETURN(std::vector<cluster::ServicePlan> plans, Plan(o));
  std::error_code ec;
  fs::remove(ClusterFile(o.data_dir), ec);
  const std::string log = (fs::path(o.data_dir) / "logs" / "supervisor.log").string();
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = ::fork();
  if (pid < 0) return absl::UnavailableError("fork failed");
  if (pid > 0) g_forked_supervisor = pid;
  if (pid == 0) {
    ::setsid();
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    const int null = ::open("/dev/null", O_RDONLY);
    if (null >= 0) ::dup2(null, 0);
    BlockStopSignals();
    ::_exit(Supervise(std::move(plans), o.data_dir));
  }
  const absl::Time deadline = absl::Now() + o.ready_timeout + absl::Seconds(10);
  for (;;) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      auto text = ReadFileToString(ClusterFile(o.data_dir), "cluster.json");
      json j = text.ok() ? json::parse(*text, nullptr, false) : json();
      const std::string why = j.is_object() && j.contains("error") ? j["error"].get<std::string>() : "it exited";
      return absl::UnavailableError(absl::StrCat("the cluster did not start: ", why, " (", log, ")"));
    }
    auto text = ReadFileToString(ClusterFile(o.data_dir), "cluster.json");
    if (text.ok()) {
      json j = json::parse(*text, nullptr, false);
      if (j.is_object() && j.value("ready", false)) return j;
    }
    if (absl::Now() > deadline) {
      ::kill(pid, SIGTERM);
      return absl::DeadlineExceededError(absl::StrCat("the cluster was not up in time (", log, ")"));
    }
    absl::SleepFor(absl::Milliseconds(100));
  }
}

absl::Status RunLocalClusterForeground(const LocalClusterOptions& o) {
  if (auto up = ReadLocalCluster(o.data_dir); up.ok()) {
    return absl::AlreadyExistsError(absl::StrCat("a cluster is already up in ", o.data_dir));
  }
  BlockStopSignals();
  CRL_RETURN_IF_ERROR(PrepareDataDir(o.data_dir));
  CRL_ASSIGN_OR_RETURN(std::vector<cluster::ServicePlan> plans, Plan(o));
  if (Supervise(std::move(plans), o.data_dir) != 0) return absl::UnavailableError("the cluster did not start");
  return absl::OkStatus();
}

void StopLocalClusterOnSignal(const std::string& data_dir) {
  if (g_signal_pipe[0] >= 0 || ::pipe2(g_signal_pipe, O_CLOEXEC) != 0) return;
  std::thread([data_dir] {
    unsigned char sig = 0;
    while (::read(g_signal_pipe[0], &sig, 1) < 0 && errno == EINTR) {
    }
    std::fprintf(stderr, "\n%s: stopping the local cluster in %s\n", strsignal(sig), data_dir.c_str());
    absl::Status s = StopLocalCluster(data_dir);
    if (const pid_t pid = g_forked_supervisor; absl::IsNotFound(s) && pid > 0 && cluster::ProcessAlive(pid)) {
      // Still starting (no cluster.json yet): its stop signals wait, blocked,
      // until its services are up; then it stops them.
      ::kill(pid, SIGTERM);
      while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
      }
      s = absl::OkStatus();
    }
    if (!s.ok() && !absl::IsNotFound(s)) std::fprintf(stderr, "warning: %s\n", s.ToString().c_str());
    std::fflush(stderr);
    ::_exit(128 + sig);
  }).detach();
  struct sigaction sa {};
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &sa, nullptr);
}

absl::Status StopLocalCluster(const std::string& data_dir, absl::Duration timeout) {
  CRL_ASSIGN_OR_RETURN(json j, ReadLocalCluster(data_dir));
  const pid_t pid = j["supervisor_pid"].get<pid_t>();
  ::kill(pid, SIGTERM);
  const absl::Time deadline = absl::Now() + timeout;
  while (cluster::ProcessAlive(pid)) {
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(absl::StrCat("the supervisor (pid ", pid, ") did not stop in ",
                                                      absl::FormatDuration(timeout)));
    }
    // Reap it when it was our own child (crl quickstart).
    ::waitpid(pid, nullptr, WNOHANG);
    absl::SleepFor(absl::Milliseconds(100));
  }
  return absl::OkStatus();
}

}  // namespace crl::cli
