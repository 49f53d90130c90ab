// KernelBench-format tasks through the real worker engine (sandboxed builds,
// harness processes, CPU PyTorch): every host candidate and hack under
// tasks/kernelbench/ gets the verdict and flags expect.yaml names; broken
// tasks are infrastructure errors, never wrong answers; timing pairs run;
// `crl bench` and `crl baseline` produce KernelBench-shaped files.
#include <catch2/catch.hpp>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "common/file.h"
#include "lib/stats/stats.h"
#include "services/worker/formats/kernelbench/kb_session.h"
#include "services/worker/lanes/runner_client.h"
#include "services/worker/worker_setup.h"
#include "tests/support/service_process.h"
#include "tests/support/test_worker.h"
#include "tests/support/wait.h"

namespace crl::testing {
namespace {

namespace fs = std::filesystem;

const std::string kRoot = std::string(CRL_SOURCE_DIR) + "/tasks/kernelbench";

std::string Read(const std::string& path) {
  return ReadFileToString(path, "test file").value_or("");
}

std::string Short(v1::Verdict v) { return v1::Verdict_Name(v).substr(8); }

std::string FlagShort(int f) { return v1::Flag_Name(static_cast<v1::Flag>(f)).substr(5); }

// One in-process worker shared by the tests of this file: two host lanes, a
// build cache kept under the build tree so the precompiled torch header is
// made once per checkout.
EvalEngine& Engine() {
  static std::unique_ptr<WorkerRuntime> rt = [] {
    WorkerOptions options = HostWorkerOptions(std::string(CRL_BIN_DIR) + "/../kb-test-cache",
                                              std::string(CRL_BIN_DIR) + "/../kb-test-work");
    options.host_lanes = 2;
    auto built = BuildWorker(options, nullptr);
    REQUIRE(built.ok());
    return std::move(*built);
  }();
  return *rt->engine;
}

v1::EvaluateRequest Request(const std::string& task_path, const std::string& source) {
  v1::EvaluateRequest req;
  req.mutable_task()->set_format(v1::TASK_FORMAT_KERNELBENCH);
  req.mutable_task()->set_path(task_path);
  req.mutable_candidate()->set_source(source);
  req.mutable_candidate()->set_filename("candidate.py");
  req.mutable_candidate()->set_backend(v1::BACKEND_HOST);
  return req;
}

TEST_CASE("every host KernelBench candidate and hack gets its expected verdict and flags",
          "[kernelbench][suite]") {
  YAML::Node expect = YAML::LoadFile(kRoot + "/expect.yaml");
  struct Case {
    std::string file, task, verdict, why;
    std::set<std::string> flags;
  };
  std::vector<Case> cases;
  for (const auto& c : expect["candidates"]) {
    if (c["backend"].as<std::string>() != "host") continue;
    Case k{c["file"].as<std::string>(), c["task"].as<std::string>(),
           c["verdict"].as<std::string>(), c["why"] ? c["why"].as<std::string>() : "", {}};
    for (const auto& f : c["flags"]) k.flags.insert(f.as<std::string>());
    cases.push_back(k);
  }
  REQUIRE(cases.size() >= 30);

  struct Got {
    std::string verdict, message;
    std::set<std::string> flags;
    bool ok = false;
  };
  std::vector<Got> got(cases.size());
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < cases.size(); i = next++) {
      auto r = Engine().Evaluate(
          Request(kRoot + "/" + cases[i].task, Read(kRoot + "/" + cases[i].file)), RequestContext::Background());
      if (!r.ok()) {
        got[i].message = r.status().ToString();
        continue;
      }
      got[i].ok = true;
      got[i].verdict = Short(r->verdict());
      for (int f : r->flags()) got[i].flags.insert(FlagShort(f));
      for (const auto& m : r->messages()) got[i].message += m + " | ";
      if (r->verdict() == v1::VERDICT_COMPILE_ERROR) got[i].message += r->compile().log().substr(0, 600);
    }
  };
  std::thread a(worker), b(worker);
  a.join();
  b.join();

  std::map<std::string, int> by_verdict;
  for (size_t i = 0; i < cases.size(); ++i) {
    INFO(cases[i].file << " on " << cases[i].task << " (" << cases[i].why << "): " << got[i].message);
    REQUIRE(got[i].ok);
    CHECK(got[i].verdict == cases[i].verdict);
    if (cases[i].verdict == "OK") CHECK(got[i].flags == cases[i].flags);
    ++by_verdict[got[i].verdict];
  }
  CHECK(by_verdict["OK"] > 0);
  CHECK(by_verdict["WRONG_ANSWER"] > 0);
  CHECK(by_verdict["COMPILE_ERROR"] > 0);
  CHECK(by_verdict["SANDBOX_VIOLATION"] > 0);
  // Most of those verdicts were reached against reference answers recorded
  // by an earlier verification of the same task (reference_cache.h): the
  // hacks are caught all the same.
  CHECK(Engine().ReferenceCacheStats().hits >= 10);
}

TEST_CASE("a broken KernelBench task is the task's problem, never a wrong answer",
          "[kernelbench]") {
  TempDir dir;
  const std::string candidate = Read(kRoot + "/generations/level_1_problem_3_sample_1_kernel.py");
  SECTION("a file that is not a task is refused with the reason") {
    std::ofstream(dir.path() + "/1_Broken.py") << "import torch\n";
    auto r = Engine().Evaluate(Request(dir.path() + "/1_Broken.py", candidate), RequestContext::Background());
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == absl::StatusCode::kInvalidArgument);  // the request's problem: exit 2 in crl eval
    CHECK_THAT(std::string(r.status().message()), Catch::Contains("class Model"));
  }
  SECTION("a candidate Python cannot compile is a compile error, a NUL byte included") {
    const std::string task = kRoot + "/level1/3_Relu.py";
    std::string nul = candidate;
    nul.insert(nul.find("import"), std::string("# \0\n", 4));
    auto r = Engine().Evaluate(Request(task, nul), RequestContext::Background());
    REQUIRE(r.ok());
    CHECK(r->verdict() == v1::VERDICT_COMPILE_ERROR);
  }
  SECTION("a reference that raises gives INFRA_ERROR, not a verdict on the candidate") {
    std::ofstream(dir.path() + "/1_Raises.py")
        << "import torch\nclass Model(torch.nn.Module):\n"
        << "    def forward(self, x):\n        raise ValueError('reference bug')\n"
        << "def get_inputs():\n    return [torch.rand(4, 4)]\n"
        << "def get_init_inputs():\n    return []\n";
    auto r = Engine().Evaluate(Request(dir.path() + "/1_Raises.py", candidate), RequestContext::Background());
    REQUIRE(r.ok());
    CHECK(r->verdict() == v1::VERDICT_INFRA_ERROR);
    CHECK_THAT(r->messages(r->messages_size() - 1), Catch::Contains("reference bug"));
  }
  SECTION("a candidate without ModelNew fails at run time with the reason") {
    auto r = Engine().Evaluate(Request(kRoot + "/level1/3_Relu.py", "import torch\nx = 1\n"), RequestContext::Background());
    REQUIRE(r.ok());
    CHECK(r->verdict() == v1::VERDICT_RUNTIME_ERROR);
    CHECK_THAT(r->messages(r->messages_size() - 1), Catch::Contains("ModelNew"));
  }
}

TEST_CASE("a build that fails before the candidate is imported is an infrastructure error",
          "[kernelbench]") {
  // A stand-in harness: its build fails either before its "toolchain ready"
  // line (torch broken: the machine's fault) or after it (the candidate's).
  TempDir dir;
  const std::string harness = dir.path() + "/harness.py";
  std::ofstream(harness) << "import sys\n"
                         << "if sys.argv[1] == 'build':\n"
                         << "    if 'after' in open(sys.argv[2]).read():\n"
                         << "        print('crl-harness: toolchain ready', file=sys.stderr)\n"
                         << "    print('ImportError: libtorch_cpu.so', file=sys.stderr)\n"
                         << "    sys.exit(1)\n";
  WorkerOptions options = HostWorkerOptions(dir.path() + "/cache", dir.path() + "/work");
  options.host_lanes = 1;
  options.compiler.kb_harness = harness;
  options.compiler.kb_pch = false;
  auto built = BuildWorker(options, nullptr);
  REQUIRE(built.ok());
  EvalEngine& engine = *(*built)->engine;

  auto before = engine.Evaluate(Request(kRoot + "/level1/3_Relu.py", "# fails before\n"), RequestContext::Background());
  REQUIRE(before.ok());
  CHECK(before->verdict() == v1::VERDICT_INFRA_ERROR);
  REQUIRE(before->messages_size() > 0);
  CHECK_THAT(before->messages(0), Catch::Contains("before the candidate was imported"));
  CHECK_THAT(before->messages(0), Catch::Contains("libtorch_cpu.so"));

  auto after = engine.Evaluate(Request(kRoot + "/level1/3_Relu.py", "# fails after\n"), RequestContext::Background());
  REQUIRE(after.ok());
  CHECK(after->verdict() == v1::VERDICT_COMPILE_ERROR);
}

TEST_CASE("KernelBench candidates are timed in interleaved pairs with checked outputs",
          "[kernelbench]") {
  auto r = Engine().Evaluate(Request(kRoot + "/level1/3_Relu.py",
                                     Read(kRoot + "/generations/level_1_problem_3_sample_0_kernel.py")), RequestContext::Background());
  REQUIRE(r.ok());
  REQUIRE(r->verdict() == v1::VERDICT_OK);
  CHECK(r->custom_kernel());
  v1::MeasurePairRequest m;
  *m.mutable_task() = Request(kRoot + "/level1/3_Relu.py", "").task();
  m.set_candidate_artifact_id(r->artifact_id());
  m.set_backend(v1::BACKEND_HOST);
  m.set_min_pairs(10);
  m.set_max_pairs(10);
  m.set_check_outputs_every(2);
  auto p = Engine().MeasurePair(m, RequestContext::Background());
  REQUIRE(p.ok());
  INFO((p->messages_size() ? p->messages(0) : ""));
  REQUIRE(p->verdict() == v1::VERDICT_OK);
  CHECK(p->reference_samples_size() == 10);
  CHECK(p->candidate_samples_size() == 10);
  CHECK(p->output_checks() == 5);
  CHECK(p->output_mismatches() == 0);
  for (const auto& s : p->candidate_samples()) CHECK(s.device_sync_seconds() > 0);
  // Staged: the round trip is the sample's own clock (the worker's writing
  // of the inputs, before it, is not the side's time).
  REQUIRE(p->candidate_outside_seconds_size() == 10);
  for (int i = 0; i < 10; ++i) {
    CHECK(p->candidate_outside_seconds(i) == Approx(p->candidate_samples(i).host_seconds()));
    CHECK(p->reference_outside_seconds(i) == Approx(p->reference_samples(i).host_seconds()));
  }

  // Checked at 1,000 sampled positions of the ReLU's output: the two
  // processes draw the same positions, so a correct candidate still agrees.
  m.set_checked_elements(1000);
  p = Engine().MeasurePair(m, RequestContext::Background());
  REQUIRE(p.ok());
  REQUIRE(p->verdict() == v1::VERDICT_OK);
  CHECK(p->output_checks() == 5);
  CHECK(p->output_mismatches() == 0);
}

// A hack of the timing (tasks/kernelbench/hacks), verified and then measured
// on the ReLU task: what verification said, and the measurement.
struct Measured {
  v1::EvaluateResponse verified;
  v1::MeasurePairResponse measured;
  double speedup = 0;  // median reference over median candidate sample
};

Measured VerifyAndMeasure(const std::string& hack) {
  Measured out;
  auto r = Engine().Evaluate(Request(kRoot + "/level1/3_Relu.py", Read(kRoot + "/hacks/" + hack)),
                             RequestContext::Background());
  REQUIRE(r.ok());
  out.verified = *r;
  INFO(hack << ": " << (r->messages_size() ? r->messages(r->messages_size() - 1) : ""));
  REQUIRE(r->verdict() == v1::VERDICT_OK);
  v1::MeasurePairRequest m;
  *m.mutable_task() = Request(kRoot + "/level1/3_Relu.py", "").task();
  m.set_candidate_artifact_id(r->artifact_id());
  m.set_backend(v1::BACKEND_HOST);
  m.set_min_pairs(20);
  m.set_max_pairs(20);
  m.set_check_outputs_every(1);
  auto p = Engine().MeasurePair(m, RequestContext::Background());
  REQUIRE(p.ok());
  out.measured = *p;
  std::vector<double> ref, cand;
  for (const auto& s : p->reference_samples()) ref.push_back(s.device_sync_seconds());
  for (const auto& s : p->candidate_samples()) cand.push_back(s.device_sync_seconds());
  if (!ref.empty() && !cand.empty()) out.speedup = stats::Median(ref) / stats::Median(cand);
  return out;
}

TEST_CASE("a KernelBench side cannot take the CPU from the other while it is timed", "[kernelbench]") {
  // The reference's own ReLU with a forked child that spins while its side
  // waits for a request: the worker stops the idle side, child included.
  Measured m = VerifyAndMeasure("starve_reference_fork.py");
  INFO("speedup " << m.speedup);
  REQUIRE(m.measured.verdict() == v1::VERDICT_OK);
  CHECK(m.speedup < 1.25);
}

TEST_CASE("host timing keeps the clock and reads the outputs outside the candidate's process", "[kernelbench]") {
  // What each hack does is in its file; each passes verification, whose
  // checks run inside the candidate's process.
  for (const char* hack : {"lazy_output_patched_methods.py", "thread_fills_later.py", "alias_when_timed.py",
                           "blind_checks.py"}) {
    Measured m = VerifyAndMeasure(hack);
    INFO(hack << ": " << m.measured.output_mismatch_detail());
    REQUIRE(m.measured.verdict() == v1::VERDICT_OK);
    CHECK(m.measured.output_checks() > 0);
    if (std::string(hack) == "thread_fills_later.py") {
      // Its thread fills a call's output 2 ms later; in a batch of calls
      // the early ones' threads finish inside the timed window (work that
      // was timed), the last ones' do not: every sample ends with outputs
      // unwritten, and checked calls among them differ (20 checks, each
      // of a call drawn from the batch).
      CHECK(m.measured.output_mismatches() > 0);
    } else {
      CHECK(m.measured.output_mismatches() == m.measured.output_checks());
    }
  }
  // A clock global of the harness, slowed: the worker's clock is the one.
  Measured clock = VerifyAndMeasure("forge_clock.py");
  INFO("speedup " << clock.speedup);
  CHECK(clock.measured.output_mismatches() == 0);
  CHECK(clock.speedup < 1.12);
  // An honest ReLU timed the same way agrees with the reference's outputs.
  Measured honest = VerifyAndMeasure("../generations/level_1_problem_3_sample_0_kernel.py");
  CHECK(honest.measured.output_checks() > 0);
  CHECK(honest.measured.output_mismatches() == 0);
}

// An honest ReLU that would notice any state a candidate before it left in
// its process: it answers wrong if it sees one.
constexpr char kHonestRelu[] = R"PY(
import builtins, os, threading
import torch
import torch.nn as nn


def _leftovers():
    return (getattr(builtins, "crl_leftover", False) or "CRL_LEFTOVER" in os.environ or
            os.path.exists(os.path.join(os.environ.get("TMPDIR", "/tmp"), "crl_leftover")) or
            torch.backends.cudnn.benchmark or
            any(t.name == "crl-leftover-spin" for t in threading.enumerate()))


class ModelNew(nn.Module):
    def forward(self, x):
        if _leftovers():
            return torch.zeros_like(x)
        return torch.relu(x)
)PY";

TEST_CASE("warm pool: what a candidate leaves in its process never reaches the next one",
          "[kernelbench][warm]") {
  // One host lane, so every side runs on it; two warm processes kept.
  WorkerOptions options = HostWorkerOptions(std::string(CRL_BIN_DIR) + "/../kb-test-cache",
                                            std::string(CRL_BIN_DIR) + "/../kb-test-work");
  options.host_lanes = 1;
  options.warm.per_host_lane = 2;
  // Both sides of every evaluation from the pool (the reference cache would
  // start only the candidate after the first).
  options.reference_cache_bytes = 0;
  auto built = BuildWorker(options, nullptr);
  REQUIRE(built.ok());
  std::unique_ptr<WorkerRuntime> rt = std::move(*built);
  REQUIRE(rt->kb_warm != nullptr);
  auto wait_for_idle = [&](int n) {
    REQUIRE(testing::Eventually([&] { return rt->kb_warm->stats().idle >= n; }, absl::Seconds(60),
                                absl::Milliseconds(100)));
  };
  const std::string task = kRoot + "/level1/3_Relu.py";
  auto evaluate = [&](const std::string& source) {
    auto r = rt->engine->Evaluate(Request(task, source), RequestContext::Background());
    REQUIRE(r.ok());
    std::string why;
    for (const auto& m : r->messages()) why += m + " | ";
    INFO(why);
    return *r;
  };
  auto flags_of = [](const v1::EvaluateResponse& r) {
    std::set<std::string> f;
    for (int x : r.flags()) f.insert(FlagShort(x));
    return f;
  };

  // The first KernelBench use of the lane starts its sides cold and asks the
  // pool to fill it.
  v1::EvaluateResponse first = evaluate(kHonestRelu);
  CHECK(Short(first.verdict()) == "OK");
  CHECK(rt->kb_warm->stats().cold == 2);

  wait_for_idle(2);
  v1::EvaluateResponse hack = evaluate(Read(kRoot + "/hacks/leaves_state_behind.py"));
  CHECK(Short(hack.verdict()) == "OK");
  CHECK(flags_of(hack) == std::set<std::string>{"GLOBAL_FLAGS", "NO_CUSTOM_KERNEL"});
  CHECK(rt->kb_warm->stats().warm == 2);  // the hack ran in pool processes

  wait_for_idle(2);
  v1::EvaluateResponse honest = evaluate(kHonestRelu);
  CHECK(rt->kb_warm->stats().warm == 4);  // and so did the honest one, after it
  REQUIRE(Short(honest.verdict()) == "OK");
  CHECK(flags_of(honest) == std::set<std::string>{"NO_CUSTOM_KERNEL"});

  // Timed from the pool too: the hack's slow relu would make every
  // candidate call take 20 ms more than the reference's.
  wait_for_idle(2);
  v1::MeasurePairRequest m;
  *m.mutable_task() = Request(task, "").task();
  m.set_candidate_artifact_id(honest.artifact_id());
  m.set_backend(v1::BACKEND_HOST);
  m.set_min_pairs(10);
  m.set_max_pairs(10);
  m.set_check_outputs_every(2);
  auto p = rt->engine->MeasurePair(m, RequestContext::Background());
  REQUIRE(p.ok());
  INFO((p->messages_size() ? p->messages(0) : ""));
  REQUIRE(p->verdict() == v1::VERDICT_OK);
  CHECK(rt->kb_warm->stats().warm == 6);
  CHECK(p->output_mismatches() == 0);
  std::vector<double> ref, cand;
  for (const auto& s : p->reference_samples()) ref.push_back(s.device_sync_seconds());
  for (const auto& s : p->candidate_samples()) cand.push_back(s.device_sync_seconds());
  std::sort(ref.begin(), ref.end());
  std::sort(cand.begin(), cand.end());
  INFO("median reference " << ref[ref.size() / 2] << " s, candidate " << cand[cand.size() / 2] << " s");
  CHECK(cand[cand.size() / 2] < ref[ref.size() / 2] * 3 + 0.005);
}

TEST_CASE("a harness comes up in steps, and is ended by a kill that its own exit cannot delay",
          "[kernelbench][warm]") {
  const RunnerOptions runner = HostWorkerOptions("", "").runner;
  KbOptions kb;
  kb.harness = std::string(CRL_SOURCE_DIR) + "/runner/python/crl_kb_harness.py";
  const Lane lane{BackendKind::kHost, 0, "host:0"};
  const RequestContext& bg = RequestContext::Background();
  RunnerEvent event;
  auto harness = SpawnKbHarness(runner, kb, lane, 300, bg, &event);
  REQUIRE(harness);
  std::string error;
  // The warm pool's steps: torch imported (no device touched), then the
  // device asked for and awaited.
  CHECK(ReadyKbHarness(harness.get(), runner, &error));
  CHECK(BeginWarmKbHarness(harness.get(), runner, lane, &error));
  CHECK(AwaitWarmKbHarness(harness.get(), runner, &error));
  INFO(error);
  CHECK(harness->kills_on_close());

  // A process whose exit hangs (an exit hook a candidate registered): asked
  // to exit, it holds whoever waits for it for the two seconds Close()
  // allows; killed, it does not.
  auto close_seconds = [&](bool kill) {
    auto p = RunnerSession::Spawn(runner, lane,
                                  {"/usr/bin/python3", "-c",
                                   "import atexit, os, struct, time\natexit.register(time.sleep, 30)\n"
                                   "os.write(4, struct.pack('<IIQ', 0x314C5243, 7, 0))\n"
                                   "while os.read(3, 65536):\n    pass\n"},
                                  {}, runner::SeccompProfile::kCompiler, 60, bg, &event);
    REQUIRE(p);
    if (kill) p->KillOnClose();
    // Its hook is registered once it says so (an empty frame of type 7).
    std::string said;
    const RunnerEvent ready = p->Reply(7, 7, 30, &said);
    INFO(ready.message);
    REQUIRE(ready.ok);
    const auto t0 = std::chrono::steady_clock::now();
    p->Close();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  const double asked = close_seconds(false);
  const double killed = close_seconds(true);
  INFO("asked to exit: closed in " << asked << " s; killed: " << killed << " s");
  CHECK(asked >= 1.9);
  CHECK(killed < 1.0);
}

// Runs a command, returns its exit code and stdout.
int Run(const std::string& command, std::string* out) {
  FILE* p = popen(command.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out->append(buf, n);
  int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST_CASE("crl bench, crl bench --cuda-l1 and crl baseline write KernelBench-shaped results",
          "[kernelbench][cli]") {
  TempDir dir;
  fs::create_directories(dir.path() + "/tasks/level1");
  fs::create_directories(dir.path() + "/gen");
  fs::copy(kRoot + "/level1/3_Relu.py", dir.path() + "/tasks/level1/");
  fs::copy(kRoot + "/level1/2_RowSum.py", dir.path() + "/tasks/level1/");
  for (const char* g : {"level_1_problem_3_sample_1_kernel.py", "level_1_problem_2_sample_1_kernel.py"}) {
    fs::copy(kRoot + "/generations/" + g, dir.path() + "/gen/");
  }
  const std::string crl = std::string(CRL_BIN_DIR) + "/crl";
  const std::string common = " --gpus= --cache_dir " + std::string(CRL_BIN_DIR) +
                             "/../kb-test-cache --budget_seconds 3 2>&1";
  std::string out;
  int rc = Run(crl + " bench --tasks " + dir.path() + "/tasks --generations " + dir.path() +
                   "/gen --out " + dir.path() + "/results.json" + common,
               &out);
  INFO(out);
  REQUIRE(rc == 0);
  CHECK_THAT(out, Catch::Contains("fast_1"));
  // The verified sample was timed on the sides that verified it.
  CHECK_THAT(out, Catch::Contains("(1 timed, 1 on the sides verification kept"));
  auto results = nlohmann::json::parse(Read(dir.path() + "/results.json"));
  // RowSum's sample 1 drops elements (wrong); Relu's sample 1 is a correct
  // pure-PyTorch rewrite: one of two tasks correct.
  CHECK(results["summary"]["level1"]["tasks"] == 2);
  CHECK(results["summary"]["level1"]["correct"] == 1);
  CHECK(results["level1"]["2"]["1"]["correctness"] == false);
  CHECK(results["level1"]["3"]["1"]["correctness"] == true);
  CHECK(results["level1"]["3"]["1"]["custom_kernel"] == false);
  CHECK(results["level1"]["3"]["1"]["speedup"].is_number());
  // Both samples went through the build step (a pure-PyTorch one too).
  CHECK(results["builds"]["cold"]["count"].get<int>() + results["builds"]["cached"]["count"].get<int>() == 2);
  CHECK(results["level1"]["3"]["1"]["metadata"]["compile_seconds"].get<double>() > 0);
  // The errors that decided: the wrong one's far outside any tolerance.
  CHECK(results["level1"]["2"]["1"]["metadata"]["max_abs_error"].get<double>() > 1e-2);
  CHECK(results["level1"]["3"]["1"]["metadata"]["max_abs_error"].get<double>() <= 1e-4);
  // The batch finished: its journal is gone.
  CHECK_FALSE(fs::exists(dir.path() + "/results.json.journal.jsonl"));

  // A batch killed part-way resumes: SIGKILL once the journal holds a
  // finished sample (one at a time), then the same command again takes it
  // from the journal and evaluates only the rest.
  const std::string again = crl + " bench --tasks " + dir.path() + "/tasks --generations " + dir.path() +
                            "/gen --jobs 1 --out " + dir.path() + "/resumed.json" + common;
  const std::string journal = dir.path() + "/resumed.json.journal.jsonl";
  REQUIRE(std::system(("(" + again + ") > " + dir.path() + "/killed.log & pid=$!; "
                       "for i in $(seq 1 1200); do [ -s " + journal + " ] && break; sleep 0.1; done; "
                       "kill -9 $pid; wait $pid 2>/dev/null; true")
                          .c_str()) == 0);
  REQUIRE(fs::exists(journal));
  CHECK_FALSE(fs::exists(dir.path() + "/resumed.json"));
  out.clear();
  rc = Run(again, &out);
  INFO(out);
  REQUIRE(rc == 0);
  CHECK_THAT(out, Catch::Contains("resuming: 1 of 2 sample(s) already done"));
  CHECK_THAT(out, Catch::Contains("journaled level1/"));
  auto resumed = nlohmann::json::parse(Read(dir.path() + "/resumed.json"));
  CHECK(resumed["level1"]["2"]["1"]["correctness"] == false);
  CHECK(resumed["level1"]["3"]["1"]["correctness"] == true);
  CHECK(resumed["summary"]["level1"]["correct"] == 1);
  CHECK_FALSE(fs::exists(journal));

  // CUDA-L1's layout: one row without a kernel, one wrong, one honest.
  {
    std::ofstream jl(dir.path() + "/l1.jsonl");
    nlohmann::json rows[] = {
        {{"level_id", 1}, {"task_id", 3}, {"ref_code", Read(kRoot + "/level1/3_Relu.py")},
         {"custom_code", "None"}, {"score_default", 1.5}},
        {{"level_id", 1}, {"task_id", 2}, {"ref_code", Read(kRoot + "/level1/2_RowSum.py")},
         {"custom_code", Read(kRoot + "/generations/level_1_problem_2_sample_1_kernel.py")},
         {"score_default", 3.0}},
        {{"level_id", 1}, {"task_id", 3}, {"ref_code", Read(kRoot + "/level1/3_Relu.py")},
         {"custom_code", Read(kRoot + "/generations/level_1_problem_3_sample_1_kernel.py")},
         {"score_default", 1.1}, {"score_other", 2}},
        // One output buffer reused across calls: timed, with the flag.
        {{"level_id", 1}, {"task_id", 3}, {"ref_code", Read(kRoot + "/level1/3_Relu.py")},
         {"custom_code", Read(kRoot + "/hacks/persistent_output.py")}, {"score_default", 2.0}}};
    for (const auto& row : rows) jl << row.dump() << "\n";
  }
  out.clear();
  rc = Run(crl + " bench --cuda-l1 " + dir.path() + "/l1.jsonl --time_after_verify --out " + dir.path() +
               "/l1.json" + common,
           &out);
  INFO(out);
  REQUIRE(rc == 0);
  // Verified first, timed afterwards on sides of its own.
  CHECK_THAT(out, Catch::Contains("(2 timed, 0 on the sides verification kept"));
  auto l1 = nlohmann::json::parse(Read(dir.path() + "/l1.json"));
  REQUIRE(l1["rows"].size() == 4);
  CHECK(l1["rows"][0]["status"] == "NO_KERNEL");
  CHECK(l1["rows"][1]["status"] == "WRONG_ANSWER");
  CHECK(l1["rows"][2]["status"] == "OK");
  CHECK(l1["rows"][2]["reported_score"] == 1.1);
  CHECK(l1["rows"][1]["within_cuda_l1_tolerance"] == false);  // wrong at any tolerance
  CHECK(l1["rows"][2]["within_cuda_l1_tolerance"] == true);
  CHECK(l1["rows"][0]["within_cuda_l1_tolerance"].is_null());  // never ran
  CHECK(l1["summary"]["wrong_within_cuda_l1_tolerance"] == 0);
  CHECK(l1["rows"][2]["speedup"].is_number());
  CHECK(l1["rows"][1]["cuda_l1_verdict"] == "WRONG_ANSWER");
  CHECK(l1["rows"][2]["cuda_l1_verdict"] == "OK");
  // The reused buffer: measured and shown with its reason, never trusted.
  CHECK(l1["rows"][3]["status"] == "OK");
  const auto& reused_flags = l1["rows"][3]["flags"];
  CHECK(std::find(reused_flags.begin(), reused_flags.end(), "WRITE_AFTER_RETURN") != reused_flags.end());
  CHECK(l1["rows"][3]["speedup"].is_number());
  CHECK(l1["rows"][3]["cuda_l1_verdict"] == "OK");
  CHECK(l1["config"]["reused_output_as_flag"] == true);
  CHECK(l1["summary"]["rows"] == 4);
  CHECK(l1["summary"]["timed"] == 2);
  CHECK(l1["summary"]["trusted"] <= 1);  // the flagged row never counts

  out.clear();
  rc = Run(crl + " baseline --tasks " + dir.path() + "/tasks --num_trials 5 --num_warmup 1 --out " +
               dir.path() + "/baseline.json" + common,
           &out);
  INFO(out);
  REQUIRE(rc == 0);
  auto baseline = nlohmann::json::parse(Read(dir.path() + "/baseline.json"));
  const auto& e = baseline["level1"]["3_Relu.py"];
  CHECK(e["num_trials"] == 5);
  CHECK(e["mean"].get<double>() > 0);
  CHECK(e["min"].get<double>() <= e["mean"].get<double>());
  CHECK(e["device"] == "host");
}

}  // namespace
}  // namespace crl::testing
