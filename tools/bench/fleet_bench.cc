// crl-bench-fleet: the cluster's services under a fleet of simulated GPU
// workers. The real crl-orchestrator, crl-timing and crl-prompt run as the
// processes `crl up` starts (lib/cluster); the workers are fake EvalServices
// on loopback gRPC, each with --lanes lanes that Evaluate holds for
// --verify_ms and MeasurePair for --measure_ms (a GPU's exclusive lane),
// answering at once with a verified candidate and plausible timing samples.
// ScoreCompletions of --per_lane items per lane (parse -> evaluate ->
// time -> reward, as in a run) measures evaluations per second against the
// fleet's capacity, lanes / (verify + measure), and the CPU each service
// spent per evaluation: what stops scaling first (docs/scaling.md).
//
//   build/bin/crl-bench-fleet --workers 64 [--set orchestrator.parallel_candidates=128,timing.threads=68]
//
// One fleet size per process: `crl up` forks its supervisor, which must
// happen before this process has any gRPC state.
#include <sys/resource.h>
#include <unistd.h>

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/file.h"
#include "common/options.h"
#include "common/paths.h"
#include "lib/cluster/plan.h"
#include "lib/cluster/process.h"
#include "crl/v1/eval.grpc.pb.h"
#include "lib/run/task_files.h"
#include "services/cli/local_cluster.h"
#include "services/orchestrator/grpc_orchestrator_client.h"

namespace {

using namespace crl;  // NOLINT: a benchmark's main
namespace v1 = crl::v1;
namespace fs = std::filesystem;

// The lanes of every fake worker, and one thread that ends each call when
// its lane time is up. A call waits for a free lane of its worker, as on a
// real worker.
class LaneClock {
 public:
  LaneClock(int workers, int lanes) : free_(workers, lanes), waiting_(workers) {
    thread_ = std::thread([this] { Run(); });
  }
  ~LaneClock() {
    {
      absl::MutexLock lock(&mu_);
      stop_ = true;
    }
    thread_.join();
  }
  void Hold(int worker, absl::Duration d, grpc::ServerUnaryReactor* reactor) {
    absl::MutexLock lock(&mu_);
    Job job{worker, d, reactor};
    if (free_[worker] > 0) {
      --free_[worker];
      due_.emplace(absl::Now() + d, job);
    } else {
      waiting_[worker].push_back(job);
    }
  }

 private:
  struct Job {
    int worker;
    absl::Duration hold;
    grpc::ServerUnaryReactor* reactor;
  };
  void Run() {
    absl::MutexLock lock(&mu_);
    while (!stop_) {
      const absl::Time now = absl::Now();
      while (!due_.empty() && due_.begin()->first <= now) {
        Job job = due_.begin()->second;
        due_.erase(due_.begin());
        job.reactor->Finish(grpc::Status::OK);
        auto& queue = waiting_[job.worker];
        if (queue.empty()) {
          ++free_[job.worker];
        } else {
          Job next = queue.front();
          queue.pop_front();
          due_.emplace(now + next.hold, next);
        }
      }
      const absl::Time wake = due_.empty() ? now + absl::Milliseconds(20) : due_.begin()->first;
      mu_.AwaitWithDeadline(absl::Condition(&stop_), std::min(wake, now + absl::Milliseconds(20)));
    }
  }

  absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<int> free_ ABSL_GUARDED_BY(mu_);
  std::vector<std::deque<Job>> waiting_ ABSL_GUARDED_BY(mu_);
  std::multimap<absl::Time, Job> due_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

// One simulated worker: a verified candidate 2x faster than its reference,
// with per-call times the oracle's checks accept.
class FakeWorker final : public v1::EvalService::CallbackService {
 public:
  FakeWorker(int index, int lanes, LaneClock* clock, absl::Duration verify, absl::Duration measure)
      : index_(index), lane_count_(lanes), lanes_(clock), verify_(verify), measure_(measure) {}

  grpc::ServerUnaryReactor* Evaluate(grpc::CallbackServerContext* context, const v1::EvaluateRequest* request,
                                     v1::EvaluateResponse* response) override {
    response->set_verdict(v1::VERDICT_OK);
    response->set_artifact_id(absl::StrCat("artifact-", std::hash<std::string>()(request->candidate().source())));
    response->set_lane(Lane());
    response->set_backend(v1::BACKEND_HOST);
    response->set_custom_kernel(true);
    response->mutable_correctness()->set_trials(5);
    response->mutable_correctness()->set_trials_passed(5);
    response->set_trials_seconds(absl::ToDoubleSeconds(verify_));
    auto* reactor = context->DefaultReactor();
    lanes_->Hold(index_, verify_, reactor);
    return reactor;
  }

  grpc::ServerUnaryReactor* MeasurePair(grpc::CallbackServerContext* context, const v1::MeasurePairRequest* request,
                                        v1::MeasurePairResponse* response) override {
    const int pairs = std::max(20, request->min_pairs());
    uint64_t x = request->seed() | 1;
    auto noise = [&x] {  // +-0.5 %
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      return 1 + ((x % 1001) / 1000.0 - 0.5) * 0.01;
    };
    for (int i = 0; i < pairs; ++i) {
      for (auto [samples, outside, seconds] :
           {std::tuple{response->mutable_reference_samples(), response->mutable_reference_outside_seconds(), 1e-3},
            std::tuple{response->mutable_candidate_samples(), response->mutable_candidate_outside_seconds(), 5e-4}}) {
        const double t = seconds * noise();
        v1::TimingSample* s = samples->Add();
        s->set_stream_event_seconds(t);
        s->set_device_sync_seconds(t);
        s->set_host_seconds(t * 1.01);
        outside->Add(t * 1.02 + 2e-5);
      }
    }
    response->set_verdict(v1::VERDICT_OK);
    response->set_output_checks(pairs / 5);
    response->set_converged(true);
    response->set_lane(Lane());
    response->set_device_name("simulated");
    response->set_backend(v1::BACKEND_HOST);
    response->set_calls_per_sample(1);
    response->set_timing_mode("eager");
    response->set_elapsed_seconds(absl::ToDoubleSeconds(measure_));
    response->set_lane_seconds(absl::ToDoubleSeconds(measure_));
    auto* reactor = context->DefaultReactor();
    lanes_->Hold(index_, measure_, reactor);
    return reactor;
  }

  grpc::ServerUnaryReactor* GetWorkerInfo(grpc::CallbackServerContext* context, const v1::GetWorkerInfoRequest*,
                                          v1::WorkerInfo* response) override {
    response->add_backends(v1::BACKEND_HOST);
    for (int i = 0; i < lane_count_; ++i) response->add_lanes(absl::StrCat("host:", i));
    auto* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

 private:
  std::string Lane() const { return absl::StrCat("host:", index_); }
  int index_;
  int lane_count_;
  LaneClock* lanes_;
  absl::Duration verify_, measure_;
};

struct Fleet {
  std::unique_ptr<LaneClock> lanes;
  std::vector<std::unique_ptr<FakeWorker>> workers;
  std::vector<std::unique_ptr<grpc::Server>> servers;
};

// The fake workers on `ports` (chosen before the cluster's supervisor is
// forked: no gRPC may exist in this process then).
std::unique_ptr<Fleet> StartFleet(const std::vector<int>& ports, int lanes, absl::Duration verify,
                                  absl::Duration measure) {
  auto f = std::make_unique<Fleet>();
  f->lanes = std::make_unique<LaneClock>(ports.size(), lanes);
  for (size_t i = 0; i < ports.size(); ++i) {
    f->workers.push_back(std::make_unique<FakeWorker>(i, lanes, f->lanes.get(), verify, measure));
    int bound = 0;
    grpc::ServerBuilder b;
    b.AddListeningPort(absl::StrCat("127.0.0.1:", ports[i]), grpc::InsecureServerCredentials(), &bound);
    b.RegisterService(f->workers.back().get());
    f->servers.push_back(b.BuildAndStart());
    if (!f->servers.back() || bound != ports[i]) return nullptr;
  }
  return f;
}

// User + system CPU seconds of a process so far.
double CpuSeconds(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return 0;
  std::vector<std::string> f = absl::StrSplit(text.substr(close + 2), ' ');
  double utime = 0, stime = 0;
  if (f.size() < 13 || !absl::SimpleAtod(f[11], &utime) || !absl::SimpleAtod(f[12], &stime)) return 0;
  return (utime + stime) / sysconf(_SC_CLK_TCK);
}

double SelfCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_utime.tv_usec / 1e6 + u.ru_stime.tv_sec + u.ru_stime.tv_usec / 1e6;
}

}  // namespace

int main(int argc, char** argv) {
  int n = 8, lanes = 1, per_lane = 4;
  double verify_ms = 400, measure_ms = 600;
  std::string task_dir = "tasks/native/row_sum", candidate = "tasks/native/row_sum/candidates/fast_correct.cc";
  std::string data_dir = "/tmp/crl-bench-fleet";
  std::vector<std::string> sets;
  OptionSet flags("crl-bench-fleet", "The cluster's services under simulated GPU workers.");
  flags.Add("workers", &n, "simulated workers");
  flags.Add("lanes", &lanes, "lanes per simulated worker");
  flags.Add("per_lane", &per_lane, "evaluations per lane in the timed call");
  flags.Add("verify_ms", &verify_ms, "lane time of one Evaluate");
  flags.Add("measure_ms", &measure_ms, "lane time of one MeasurePair");
  flags.Add("task", &task_dir, "native task directory");
  flags.Add("candidate", &candidate, "the completion's code");
  flags.Add("data_dir", &data_dir, "the cluster's data directory (its run directory is removed first)");
  flags.Add("set", &sets, "SERVICE.OPTION=VALUE,... over the chart's config files");
  if (int code = flags.ParseForMain(argc, argv); code >= 0) return code;
  if (n < 1 || lanes < 1 || per_lane < 1) {
    std::fprintf(stderr, "workers, lanes, per_lane: must be at least 1\n");
    return 2;
  }
  auto fail = [](const absl::Status& s) {
    std::fprintf(stderr, "crl-bench-fleet: %s\n", s.ToString().c_str());
    return 1;
  };
  auto task = run::TaskFor(task_dir, /*inline_files=*/true);
  if (!task.ok()) return fail(task.status());
  auto code = ReadFileToString(candidate, "candidate");
  if (!code.ok()) return fail(code.status());
  task->set_name("bench");

  std::vector<int> ports;
  std::vector<std::string> addresses;
  for (int i = 0; i < n; ++i) {
    auto port = cluster::FreePort("127.0.0.1");
    if (!port.ok()) return fail(port.status());
    if (std::find(ports.begin(), ports.end(), *port) != ports.end()) {
      --i;
      continue;
    }
    ports.push_back(*port);
    addresses.push_back(absl::StrCat("127.0.0.1:", *port));
  }
  cli::LocalClusterOptions o;
  o.data_dir = absl::StrCat(data_dir, "/", n, "x", lanes);
  std::error_code ec;
  fs::remove_all(o.data_dir, ec);
  o.policy_dir = data_dir + "/policy";
  o.overrides["orchestrator"]["workers"] = absl::StrJoin(addresses, ",");
  o.overrides["timing"]["workers"] = absl::StrJoin(addresses, ",");
  for (const std::string& s : sets) {
    if (absl::Status st = cluster::ParseOverride(s, &o.overrides); !st.ok()) return fail(st);
  }
  if (!fs::exists(o.policy_dir + "/model.safetensors")) {
    if (absl::Status st = cli::PrepareEmbeddedPolicy(o.policy_dir, 1); !st.ok()) return fail(st);
  }
  auto cluster = cli::StartLocalCluster(o);
  if (!cluster.ok()) return fail(cluster.status());
  auto fleet = StartFleet(ports, lanes, absl::Milliseconds(verify_ms), absl::Milliseconds(measure_ms));
  ClientOptions client_options = cli::LocalClusterClient(*cluster);
  client_options.timeout = absl::Minutes(20);
  auto client = GrpcOrchestratorClient::Create((*cluster)["services"]["orchestrator"]["address"].get<std::string>(),
                                               client_options);
  auto score = [&](int items) -> absl::StatusOr<v1::ScoreCompletionsResponse> {
    v1::ScoreCompletionsRequest req;
    *req.mutable_spec()->add_tasks() = *task;
    req.mutable_spec()->set_backend(v1::BACKEND_HOST);
    for (int i = 0; i < items; ++i) {
      v1::ScoreItem* item = req.add_items();
      item->set_task_name("bench");
      // Distinct sources: nothing is served from a cache.
      item->set_completion(absl::StrCat("```cpp\n", *code, "\n// variant ", i, "\n```\n"));
    }
    RequestContext ctx(RealClock::Get(), absl::Now() + absl::Minutes(20));
    return (*client)->ScoreCompletions(req, ctx);
  };
  std::map<std::string, pid_t> pids;
  for (const char* s : {"orchestrator", "timing", "prompt"}) pids[s] = (*cluster)["services"][s]["pid"].get<int>();
  absl::Status status = !fleet ? absl::UnavailableError("cannot start the fake workers")
                        : !client.ok() ? client.status()
                                       : score(n * lanes).status();  // warm-up: connections, caches
  const int items = n * lanes * per_lane;
  int infra = 0, ok = 0;
  double evals_per_second = 0;
  std::map<std::string, double> cpu;
  if (status.ok()) {
    std::map<std::string, double> before;
    for (const auto& [s, pid] : pids) before[s] = CpuSeconds(pid);
    const double self_before = SelfCpuSeconds();
    const auto t0 = std::chrono::steady_clock::now();
    auto timed = score(items);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    status = timed.status();
    if (timed.ok()) {
      for (const auto& v : timed->results()) {
        infra += v.infra_failure() ? 1 : 0;
        ok += v.verdict() == v1::VERDICT_OK && v.reward().status() == v1::REWARD_STATUS_OK ? 1 : 0;
      }
      evals_per_second = items / wall;
      for (const auto& [s, pid] : pids) cpu[s] = (CpuSeconds(pid) - before[s]) * 1000 / items;
      cpu["fleet"] = (SelfCpuSeconds() - self_before) * 1000 / items;
    }
  }
  (void)cli::StopLocalCluster(o.data_dir);
  if (!status.ok()) return fail(status);
  const double capacity = n * lanes / ((verify_ms + measure_ms) / 1000);
  std::printf("workers %d x %d lanes: capacity %.1f evals/s, measured %.1f (%.0f%%) over %d evaluations, "
              "%d rewarded, %d infra failures; CPU ms per evaluation: orchestrator %.1f, timing %.1f, "
              "prompt %.1f, fake fleet %.1f\n",
              n, lanes, capacity, evals_per_second, 100 * evals_per_second / capacity, items, ok, infra,
              cpu["orchestrator"], cpu["timing"], cpu["prompt"], cpu["fleet"]);
  return 0;
}
