// The local cluster's plan and supervisor on fakes: services start in
// dependency order, each wired to the others with the cluster's token and
// its own config file; a crashed service is restarted with a doubling
// back-off; stopping goes in reverse order and escalates to SIGKILL.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <set>

#include "lib/cluster/fake_process_launcher.h"
#include "lib/cluster/plan.h"
#include "lib/cluster/supervisor.h"

namespace crl::cluster {
namespace {

namespace fs = std::filesystem;

struct Tree {
  Tree() : root(fs::temp_directory_path() / ("crl-cluster-" + std::to_string(::getpid()))) {
    fs::create_directories(root / "bin");
    fs::create_directories(root / "config");
    for (const char* b : {"crl-worker", "crl-prompt", "crl-trainer", "crl-timing", "crl-sampler", "crl-orchestrator"}) {
      std::ofstream(root / "bin" / b) << "";
    }
    std::ofstream(root / "config" / "timing.yaml") << "budget_seconds: 5\n";
  }
  ~Tree() { fs::remove_all(root); }
  ClusterOptions Options() const {
    ClusterOptions o;
    o.data_dir = (root / "data").string();
    o.bin_dir = (root / "bin").string();
    o.config_dir = (root / "config").string();
    o.policy_dir = (root / "policy").string();
    return o;
  }
  fs::path root;
};

std::function<absl::StatusOr<int>()> Ports() {
  auto next = std::make_shared<int>(40000);
  return [next]() -> absl::StatusOr<int> { return (*next)++; };
}

bool Has(const ServicePlan& p, const std::string& arg) {
  return std::find(p.args.begin(), p.args.end(), arg) != p.args.end();
}

bool HasPrefix(const ServicePlan& p, const std::string& prefix) {
  return std::any_of(p.args.begin(), p.args.end(), [&](const std::string& a) { return a.rfind(prefix, 0) == 0; });
}

TEST_CASE("a cluster plan: start order, wiring, config files, overrides last", "[cluster]") {
  Tree t;
  ClusterOptions o = t.Options();
  REQUIRE(ParseOverride("trainer.lr=0.002", &o.overrides).ok());
  auto plans = PlanCluster(o, Ports());
  REQUIRE(plans.ok());
  REQUIRE(plans->size() == 6);
  std::vector<std::string> names;
  std::set<int> ports;
  for (const auto& p : *plans) {
    names.push_back(p.name);
    ports.insert(p.grpc_port);
    ports.insert(p.metrics_port);
    CHECK(Has(p, "--auth_token_file=" + (t.root / "data" / "token").string()));
    CHECK(p.log_path == (t.root / "data" / "logs" / (p.name + ".log")).string());
  }
  CHECK(names == ServiceNames());
  CHECK(ports.size() == 12);  // every port its own
  const ServicePlan& worker = (*plans)[0];
  const ServicePlan& timing = (*plans)[3];
  const ServicePlan& orchestrator = (*plans)[5];
  CHECK(Has(timing, "--config=" + (t.root / "config" / "timing.yaml").string()));
  CHECK_FALSE(Has(worker, "--config=" + (t.root / "config" / "worker.yaml").string()));  // no file: defaults
  CHECK(Has(timing, "--worker=" + worker.address()));
  // Worker addresses are configured once, for crl-timing; the orchestrator
  // evaluates on the workers timing lists.
  CHECK_FALSE(HasPrefix(orchestrator, "--workers"));
  CHECK(Has(orchestrator, "--timing=" + timing.address()));
  CHECK((*plans)[2].args.back() == "--lr=0.002");

  // A port source that repeats itself (as bind to port 0 may, once a port
  // is closed again) still gives every listener its own port.
  auto repeats = std::make_shared<int>(0);
  auto twice = PlanCluster(o, [repeats]() -> absl::StatusOr<int> { return 41000 + (*repeats)++ / 2; });
  REQUIRE(twice.ok());
  std::set<int> distinct;
  for (const auto& p : *twice) {
    distinct.insert(p.grpc_port);
    distinct.insert(p.metrics_port);
    if (p.openai_port) distinct.insert(p.openai_port);
  }
  CHECK(distinct.size() == 13);
  auto stuck = PlanCluster(o, []() -> absl::StatusOr<int> { return 41000; });
  CHECK_THAT(std::string(stuck.status().message()), Catch::Contains("no free port distinct"));

  std::map<std::string, std::map<std::string, std::string>> bad;
  CHECK_THAT(std::string(ParseOverride("gpu.x=1", &bad).message()), Catch::Contains("no service 'gpu'"));
  CHECK_THAT(std::string(ParseOverride("trainer-lr", &bad).message()), Catch::Contains("SERVICE.OPTION=VALUE"));
  fs::remove(t.root / "bin" / "crl-timing");
  auto missing = PlanCluster(t.Options(), Ports());
  CHECK_THAT(std::string(missing.status().message()), Catch::Contains("crl-timing does not exist"));
}

TEST_CASE("a cluster plan from an image: services in containers, the worker on the host", "[cluster]") {
  Tree t;
  ClusterOptions o = t.Options();
  o.policy_dir = (t.root / "data" / "policy").string();  // inside data_dir: mounted with it
  o.image = "localhost/crl/services:test";
  o.container_runtime = (t.root / "bin" / "crl-worker").string();  // any file that exists
  o.container_args = {"--runtime=runc"};
  REQUIRE(ParseOverride("trainer.lr=0.002", &o.overrides).ok());
  auto plans = PlanCluster(o, Ports());
  REQUIRE(plans.ok());
  const std::string data = (t.root / "data").string();
  for (const ServicePlan& p : *plans) {
    INFO(p.name);
    if (p.name == "worker") {
      CHECK(p.binary == (t.root / "bin" / "crl-worker").string());
      CHECK(p.args[0] != "run");
      continue;
    }
    CHECK(p.binary == o.container_runtime);
    const std::vector<std::string> head(p.args.begin(), p.args.begin() + 10);
    CHECK(head == std::vector<std::string>{"run", "--rm", "--name=" + ContainerName(p.name, p.grpc_port),
                                           "--network=host",
                                           "--user=" + std::to_string(::getuid()) + ":" + std::to_string(::getgid()),
                                           "--volume=" + data + ":" + data,
                                           "--volume=" + o.config_dir + ":" + o.config_dir + ":ro", "--runtime=runc",
                                           o.image, "crl-" + p.name});
    // The service's own flags follow, as on the host.
    CHECK(Has(p, "--listen=" + p.address()));
    CHECK(Has(p, "--auth_token_file=" + data + "/token"));
  }
  CHECK((*plans)[2].args.back() == "--lr=0.002");
  // A worker image too: the worker's container runs as the image's root,
  // with its own arguments, and the image's entrypoint starts crl-worker.
  o.worker_image = "localhost/crl/worker-cpu:test";
  o.worker_container_args = {"--privileged"};
  auto with_worker = PlanCluster(o, Ports());
  REQUIRE(with_worker.ok());
  const ServicePlan& w = (*with_worker)[0];
  CHECK(w.binary == o.container_runtime);
  const std::vector<std::string> worker_head(w.args.begin(), w.args.begin() + 9);
  CHECK(worker_head == std::vector<std::string>{"run", "--rm", "--name=" + ContainerName("worker", w.grpc_port),
                                                "--network=host", "--volume=" + data + ":" + data,
                                                "--volume=" + o.config_dir + ":" + o.config_dir + ":ro",
                                                "--runtime=runc", "--privileged", o.worker_image});
  CHECK(w.args[9].rfind("--", 0) == 0);  // its flags follow the image
  CHECK(Has(w, "--listen=" + w.address()));
  CHECK_FALSE(Has((*with_worker)[1], "--privileged"));  // the worker's arguments only
  o.container_runtime = "no-such-runtime-anywhere";
  CHECK_THAT(std::string(PlanCluster(o, Ports()).status().message()),
             Catch::Contains("container_runtime: 'no-such-runtime-anywhere' is not on PATH"));
}

struct Rig {
  Tree tree;
  FakeLauncher launcher;
  FakeClock clock;
  std::set<std::string> not_ready;
  std::vector<std::string> log;
  std::unique_ptr<Supervisor> sup;
  Rig() {
    auto plans = PlanCluster(tree.Options(), Ports());
    REQUIRE(plans.ok());
    SupervisorOptions so;
    so.ready_timeout = absl::Seconds(5);
    sup = std::make_unique<Supervisor>(
        *plans, &launcher, &clock, [this](const ServicePlan& p) { return !not_ready.count(p.name); },
        [this](const std::string& line) { log.push_back(line); }, so);
  }
};

TEST_CASE("the supervisor starts in order, restarts a crash with back-off, stops in reverse", "[cluster]") {
  Rig rig;
  REQUIRE(rig.sup->StartAll().ok());
  REQUIRE(rig.launcher.started().size() == 6);
  for (size_t i = 0; i < 6; ++i) {
    CHECK(rig.launcher.record(rig.launcher.started()[i]).argv[0].find(ServiceNames()[i]) != std::string::npos);
  }
  // kill -9 of the trainer: restarted after 1 s, then 2 s for a second crash.
  const pid_t trainer = rig.sup->states()[2].pid;
  rig.launcher.Exit(trainer, -9);
  CHECK(rig.sup->Tick());
  CHECK(rig.sup->states()[2].pid == -1);
  CHECK(rig.sup->states()[2].last_exit == "signal 9");
  rig.clock.Advance(absl::Milliseconds(900));
  rig.sup->Tick();
  CHECK(rig.sup->states()[2].pid == -1);  // not yet
  rig.clock.Advance(absl::Milliseconds(200));
  rig.sup->Tick();
  const pid_t again = rig.sup->states()[2].pid;
  CHECK(again > trainer);
  rig.sup->Tick();  // probed: ready again
  CHECK(rig.sup->states()[2].ready);
  rig.launcher.Exit(again, 1);
  rig.sup->Tick();
  CHECK(rig.sup->states()[2].restarts == 2);
  rig.clock.Advance(absl::Milliseconds(1500));
  rig.sup->Tick();
  CHECK(rig.sup->states()[2].pid == -1);  // the second back-off is 2 s
  rig.clock.Advance(absl::Milliseconds(600));
  rig.sup->Tick();
  CHECK(rig.sup->states()[2].pid > again);

  // Stop: reverse order, SIGTERM; one that ignores it gets SIGKILL.
  rig.launcher.IgnoreSigterm(true);
  const pid_t orchestrator = rig.sup->states()[5].pid;
  rig.sup->StopAll();
  CHECK(rig.launcher.record(orchestrator).signals == std::vector<int>{SIGTERM, SIGKILL});
  CHECK(rig.log.back() == "worker stopped");
  for (const auto& s : rig.sup->states()) CHECK(s.pid == -1);
}

TEST_CASE("a service that never turns ready fails the start, naming its log; the rest is stopped", "[cluster]") {
  Rig rig;
  rig.not_ready.insert("timing");
  absl::Status s = rig.sup->StartAll();
  REQUIRE_FALSE(s.ok());
  CHECK_THAT(std::string(s.message()), Catch::Contains("timing was not ready") && Catch::Contains("timing.log"));
  CHECK(rig.launcher.started().size() == 4);  // nothing after timing started
  for (pid_t pid : rig.launcher.started()) CHECK(rig.launcher.Poll(pid).has_value());
}

}  // namespace
}  // namespace crl::cluster
