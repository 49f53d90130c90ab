// The policy tools as processes: `crl policy` against the Python reference,
// crl-trainer killed with SIGKILL mid-run and resumed (the result equals an
// uninterrupted run bit for bit), and two crl-trainer ranks over LibTorch's
// c10d Gloo backend equal to one process training the same global batch,
// placed by a launcher's environment, one of them killed and named.
#include "tests/support/torch_catch.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/file.h"
#include "lib/cluster/process.h"
#include "lib/policy/safetensors.h"
#include "lib/policy/tokenizer.h"
#include "lib/run/run_spec.h"
#include "services/cli/local_cluster.h"
#include "tests/support/policy_test_util.h"

extern char** environ;

namespace crl::policy {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kBin = CRL_BIN_DIR;
const std::string kSource = CRL_SOURCE_DIR;

// Runs a shell command; its output goes to `log` (shown when a check fails).
int Sh(const std::string& cmd, const std::string& log) {
  return std::system((cmd + " >" + log + " 2>&1").c_str());
}

std::string Read(const std::string& path) { return ReadFileToString(path, "file").value_or(""); }

// A small model made with the CLI: a tokenizer trained on tasks/, a random
// qwen2 model of a config.json.
std::string MakeModel(const TempDir& dir) {
  const std::string log = dir.path() + "/make.log";
  const std::string m = dir.path() + "/model";
  REQUIRE(WriteStringToFile(dir.path() + "/config.json", R"({
    "model_type": "qwen2", "vocab_size": 512, "hidden_size": 64, "intermediate_size": 128,
    "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
    "max_position_embeddings": 512, "tie_word_embeddings": true, "torch_dtype": "float32"})")
              .ok());
  INFO(Read(log));
  REQUIRE(Sh(kBin + "/crl policy tokenizer-train --corpus " + kSource + "/tasks --vocab 512 --out " +
                 dir.path() + "/tok/tokenizer.json",
             log) == 0);
  REQUIRE(Sh(kBin + "/crl policy init --config " + dir.path() + "/config.json --out " + m +
                 " --seed 3 --tokenizer " + dir.path() + "/tok/tokenizer.json",
             log) == 0);
  return m;
}

// Supervised examples as crl-trainer --offline reads them.
std::string WriteExamples(const TempDir& dir, int n) {
  const std::string path = dir.path() + "/examples.jsonl";
  std::ofstream out(path);
  std::mt19937 rng(5);
  for (int i = 0; i < n; ++i) {
    const int a = rng() % 100, b = rng() % 100;
    out << json({{"prompt", absl::StrCat("add ", a, " and ", b)},
                 {"completion", absl::StrCat("return ", a + b, "  # computed")},
                 {"example_id", absl::StrCat("ex", i)}})
               .dump()
        << "\n";
  }
  return path;
}

// Groups with rewards as crl-trainer --offline reads them.
std::string WriteGroups(const TempDir& dir, int n) {
  const std::string path = dir.path() + "/groups.jsonl";
  std::ofstream out(path);
  std::mt19937 rng(8);
  const std::vector<std::string> answers = {"return x", "x * 2", "torch.relu(x)", "y = x + 1"};
  for (int i = 0; i < n; ++i) {
    json comps = json::array();
    for (int j = 0; j < 4; ++j) {
      comps.push_back({{"completion", answers[rng() % 4]},
                       {"reward", {{"status", "REWARD_STATUS_OK"}, {"reward", (rng() % 100) / 50.0}}}});
    }
    out << json({{"group_id", absl::StrCat("g", i)}, {"prompt", absl::StrCat("kernel ", i)},
                 {"completions", comps}})
               .dump()
        << "\n";
  }
  return path;
}

std::vector<float> Floats(const std::string& file, const std::string& tensor) {
  auto f = SafetensorsFile::Open(file);
  REQUIRE(f.ok());
  const TensorView* v = (*f)->Find(tensor);
  REQUIRE(v != nullptr);
  REQUIRE(v->dtype == DType::kF32);
  const float* p = reinterpret_cast<const float*>(v->bytes.data());
  return std::vector<float>(p, p + v->numel());
}

TEST_CASE("crl policy logprobs and tokenize agree with the reference and the tokenizer", "[policy][process]") {
  TempDir dir;
  const std::string m = MakeModel(dir);
  const std::string log = dir.path() + "/cli.log";
  REQUIRE(Sh(kBin + "/crl policy tokenize --model " + m + " --text 'def f(x): return x' --json", log) == 0);
  json ids = json::parse(Read(log))["ids"];
  REQUIRE(ids.size() >= 3);
  std::string list;
  for (const auto& id : ids) absl::StrAppend(&list, list.empty() ? "" : ",", id.get<int>());
  REQUIRE(Sh(kBin + "/crl policy logprobs --model " + m + " --ids " + list + " --json", log) == 0);
  std::vector<double> lp = json::parse(Read(log))["logprobs"].get<std::vector<double>>();
  REQUIRE(lp.size() == ids.size() - 1);
  auto ref = RunReference(m, {{"ids", {ids}}});
  REQUIRE(ref.ok());
  const auto& logits = (*ref)["logits"][0];
  for (size_t t = 0; t + 1 < ids.size(); ++t) {
    std::vector<double> row = logits[t].get<std::vector<double>>();
    double mx = *std::max_element(row.begin(), row.end()), z = 0;
    for (double v : row) z += std::exp(v - mx);
    CHECK(lp[t] == Approx(row[ids[t + 1].get<int>()] - mx - std::log(z)).margin(1e-5));
  }
  // Bad input: a clear error and exit code 2.
  CHECK(Sh(kBin + "/crl policy logprobs --model " + m + " --ids 1,99999", log) >> 8 == 2);
  CHECK_THAT(Read(log), Catch::Contains("outside the vocabulary"));
  CHECK(Sh(kBin + "/crl policy generate --model " + m + " --prompt hi --chat --max_new_tokens 5 --json", log) == 0);
  CHECK(json::parse(Read(log))["ids"].size() <= 5);
}

TEST_CASE("the embedded run's token cap fits every answer its SFT teaches", "[policy][process]") {
  // The tokenizer `make run` trains (on the same corpus, the same way), and
  // the answers the sft stage trains on, as it renders them.
  TempDir dir;
  REQUIRE(cli::PrepareEmbeddedPolicy(dir.path() + "/policy", 1).ok());
  auto tok = policy::Tokenizer::FromFile(dir.path() + "/policy/tokenizer.json");
  REQUIRE(tok.ok());
  const std::string root = CRL_SOURCE_DIR;
  auto load = [&](const std::string& name) {
    auto spec = run::LoadRunSpecFile(root + "/examples/" + name);
    REQUIRE(spec.ok());
    return *spec;
  };
  const v1::RunSpec sft = load("embedded-sft.yaml"), rl = load("embedded.yaml");
  REQUIRE(sft.sft_examples_size() >= 2 * rl.tasks_size());
  REQUIRE(rl.max_tokens() > 0);
  size_t longest = 0;
  for (const v1::SftExample& e : sft.sft_examples()) {
    const v1::Task* task = nullptr;
    for (const auto& t : sft.tasks()) {
      if (t.name() == e.task_name()) task = &t;
    }
    REQUIRE(task != nullptr);
    // The answer and the end-of-turn token the model must also write.
    const size_t tokens = (*tok)->Encode(run::SftAnswer(e, *task, sft.backend()), false).size() + 1;
    INFO(e.origin() << ": " << tokens << " tokens");
    CHECK(tokens <= static_cast<size_t>(rl.max_tokens()));
    longest = std::max(longest, tokens);
  }
  // Not so loose that a runaway sample costs much more than an answer.
  CHECK(longest * 3 / 2 >= static_cast<size_t>(rl.max_tokens()));
}

TEST_CASE("crl-trainer killed with SIGKILL resumes to the same weights, bit for bit", "[trainer][process]") {
  TempDir dir;
  const std::string m = MakeModel(dir);
  const std::string data = WriteExamples(dir, 48);
  auto args = [&](const std::string& out) {
    return std::vector<std::string>{kBin + "/crl-trainer", "--model", m, "--out_dir", out,
                                    "--offline", data, "--examples_per_step", "4", "--epochs", "2",
                                    "--lr", "1e-3", "--checkpoint_every", "1", "--warmup_steps", "3",
                                    "--total_steps", "24", "--log_level", "warning"};
  };
  const std::string log = dir.path() + "/train.log";
  std::string cmd;
  for (const auto& a : args(dir.path() + "/straight")) absl::StrAppend(&cmd, a, " ");
  REQUIRE(Sh(cmd, log) == 0);
  const std::string straight = dir.path() + "/straight/policy/v24/model.safetensors";
  REQUIRE(fs::exists(straight));

  // The same run, killed once a few checkpoints exist, then run again.
  const std::string out = dir.path() + "/killed";
  std::vector<std::string> a = args(out);
  std::vector<char*> argv;
  for (auto& s : a) argv.push_back(s.data());
  argv.push_back(nullptr);
  pid_t pid;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  REQUIRE(posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ) == 0);
  posix_spawn_file_actions_destroy(&actions);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (!fs::exists(out + "/checkpoints/step-5") && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  REQUIRE(WIFSIGNALED(status));  // killed mid-run, not finished
  CHECK_FALSE(fs::exists(out + "/policy/v24"));
  cmd.clear();
  for (const auto& s : a) absl::StrAppend(&cmd, s, " ");
  INFO(Read(log));
  REQUIRE(Sh(cmd, log) == 0);
  CHECK_THAT(Read(log), Catch::Contains("resumed at step"));
  CHECK(Read(out + "/policy/v24/model.safetensors") == Read(straight));
}

// Checks every tensor of safetensors file `a` against `b` (fp32, within
// 1e-4, a tenth of one step at lr 1e-3: data-parallel sums round
// differently, and AdamW divides each update by the root of its own second
// moment, so an element whose gradient is near zero turns a rounding
// difference into a visible one; 2.1e-5 was seen under the suite's load. A
// rank's batch lost or counted twice moves weights by about a step); returns
// how many.
int CheckSameWeights(const std::string& a, const std::string& b) {
  REQUIRE(fs::exists(a));
  REQUIRE(fs::exists(b));
  auto file = SafetensorsFile::Open(a);
  REQUIRE(file.ok());
  int compared = 0;
  for (const auto& [name, view] : (*file)->tensors()) {
    std::vector<float> x = Floats(a, name), y = Floats(b, name);
    REQUIRE(x.size() == y.size());
    double worst = 0;
    for (size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::fabs(double(x[i]) - y[i]));
    INFO(name << ": max |" << a << " - " << b << "| = " << worst);
    CHECK(worst < 1e-4);
    ++compared;
  }
  return compared;
}

// LoRA, and full weights with the gradients in many small buckets summed
// during the last of several micro-batches' backward (grad_buckets.h).
TEST_CASE("two Gloo ranks equal one process on the same global batch", "[trainer][process]") {
  const bool lora = GENERATE(true, false);
  INFO((lora ? "LoRA" : "full weights, 64 KiB buckets"));
  TempDir dir;
  const std::string m = MakeModel(dir);
  const std::string data = WriteGroups(dir, 12);
  const std::string common = absl::StrCat(
      kBin, "/crl-trainer --model ", m, " --offline ", data,
      " --groups_per_step 4 --lr 1e-3 --log_level warning --checkpoint_every 0",
      lora ? " --lora --lora_rank 4 --lora_targets q_proj,v_proj,down_proj"
           : " --reduce_bucket_mb 0.0625 --micro_batch_tokens 64");
  const std::string log = dir.path() + "/dp.log";
  INFO(Read(log));
  REQUIRE(Sh(common + " --out_dir " + dir.path() + "/one", log) == 0);
  const std::string store = dir.path() + "/store";
  const std::string two = dir.path() + "/two";
  REQUIRE(Sh("bash -c '" + common + " --out_dir " + two + " --world_size 2 --rank 1 --dist_store " +
                 store + " & r1=$!; " + common + " --out_dir " + two +
                 " --world_size 2 --rank 0 --dist_store " + store + "; r0=$?; wait $r1 && exit $r0'",
             log) == 0);
  const std::string file = lora ? "adapter_model.safetensors" : "model.safetensors";
  const std::string a = dir.path() + "/one/policy/v3/" + file;
  const std::string b = two + "/policy/v3/" + file;
  // A and B of 3 targets in 2 layers; or, in full, 12 tensors per layer (7
  // projections, 3 biases, 2 norms), the embedding (tied) and the last norm.
  CHECK(CheckSameWeights(a, b) == (lora ? 12 : 26));
  // A second rank is a real participant: its RNG file is in the checkpoint.
  CHECK(fs::exists(two + "/checkpoints/step-3/rng-rank1.safetensors"));
}

// Starts and reaps the ranks (the local cluster's launcher).
cluster::PosixLauncher& Launcher() {
  static cluster::PosixLauncher launcher;
  return launcher;
}

int FreePort() {
  auto port = cluster::FreePort("127.0.0.1");
  REQUIRE(port.ok());
  return *port;
}

// One rank as a launcher starts it: the placement only in the environment.
pid_t SpawnRank(const std::vector<std::string>& args, int rank, int port, const std::string& log) {
  std::vector<std::string> argv = {"/usr/bin/env", "RANK=" + std::to_string(rank), "WORLD_SIZE=2",
                                   "LOCAL_RANK=" + std::to_string(rank), "MASTER_ADDR=127.0.0.1",
                                   "MASTER_PORT=" + std::to_string(port)};
  argv.insert(argv.end(), args.begin(), args.end());
  auto pid = Launcher().Start(argv, log);
  REQUIRE(pid.ok());
  return *pid;
}

// The exit status of `pid` (128 + the signal that ended it), or -1 when it
// runs past `limit` (then killed).
int WaitExit(pid_t pid, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  std::optional<int> status;
  while (!(status = Launcher().Poll(pid))) {
    if (std::chrono::steady_clock::now() > deadline) {
      Launcher().Signal(pid, SIGKILL);
      while (!Launcher().Poll(pid)) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return *status < 0 ? 128 - *status : *status;
}

// A rank placed by torchrun itself (python3-torch's launcher): its agent
// serves the rendezvous store on MASTER_PORT (TORCHELASTIC_USE_AGENT_STORE),
// so rank 0 must join that store instead of serving one there.
TEST_CASE("two ranks launched by torchrun equal one process on the same global batch", "[trainer][process]") {
  const std::string torchrun = "/usr/bin/torchrun";
  INFO("torchrun comes with Debian's python3-torch (scripts/setup.sh)");
  REQUIRE(fs::exists(torchrun));
  TempDir dir;
  const std::string m = MakeModel(dir);
  const std::string data = WriteGroups(dir, 12);
  const std::string args = absl::StrCat(" --model ", m, " --offline ", data,
                                        " --groups_per_step 4 --lr 1e-3 --log_level warning"
                                        " --checkpoint_every 0 --lora --lora_rank 4"
                                        " --lora_targets q_proj,v_proj,down_proj");
  const std::string log = dir.path() + "/torchrun.log";
  INFO(Read(log));
  REQUIRE(Sh(kBin + "/crl-trainer --out_dir " + dir.path() + "/one" + args, log) == 0);
  const std::string two = dir.path() + "/two";
  // --redirects/--tee 1: Debian's torch 1.13 under Python 3.11 cannot read
  // their default "0" (IntFlag no longer iterates over NONE); stdout is
  // teed to the launcher's, where Sh's log gets it.
  REQUIRE(Sh(absl::StrCat(torchrun, " --redirects 1 --tee 1 --nnodes 1 --nproc_per_node 2 --master_addr 127.0.0.1 --master_port ",
                          FreePort(), " --max_restarts 0 --no_python ", kBin, "/crl-trainer --out_dir ", two,
                          args),
             log) == 0);
  CHECK(CheckSameWeights(dir.path() + "/one/policy/v3/adapter_model.safetensors",
                         two + "/policy/v3/adapter_model.safetensors") == 12);
  CHECK(fs::exists(two + "/checkpoints/step-3/rng-rank1.safetensors"));
}

TEST_CASE("ranks placed by the launcher's environment: a killed rank is named, a restart resumes",
          "[trainer][process]") {
  TempDir dir;
  const std::string m = MakeModel(dir);
  const std::string data = WriteGroups(dir, 40);
  auto args = [&](const std::string& out) {
    return std::vector<std::string>{kBin + "/crl-trainer", "--model", m, "--out_dir", out, "--offline",
                                    data, "--groups_per_step", "4", "--epochs", "4", "--lr", "1e-3",
                                    "--checkpoint_every", "1", "--lora", "--lora_rank", "4",
                                    "--dist_heartbeat", "0.2", "--log_level", "warning"};
  };
  const std::string log = dir.path() + "/one.log";
  std::string cmd;
  for (const auto& a : args(dir.path() + "/one")) absl::StrAppend(&cmd, a, " ");
  INFO(Read(log));
  REQUIRE(Sh(cmd, log) == 0);
  const std::string straight = dir.path() + "/one/policy/v40/adapter_model.safetensors";
  REQUIRE(fs::exists(straight));

  // Two ranks; rank 1 is killed once a few steps are checkpointed.
  const std::string two = dir.path() + "/two";
  const std::string log0 = dir.path() + "/rank0.log", log1 = dir.path() + "/rank1.log";
  int port = FreePort();
  pid_t r1 = SpawnRank(args(two), 1, port, log1);
  pid_t r0 = SpawnRank(args(two), 0, port, log0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (!fs::exists(two + "/checkpoints/step-3") && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  kill(r1, SIGKILL);
  CHECK(WaitExit(r1, std::chrono::seconds(10)) == 128 + SIGKILL);
  // Rank 0 fails at its next collective, naming the rank that is gone.
  const int failed = WaitExit(r0, std::chrono::seconds(60));
  INFO("rank 0: " << Read(log0) << "\nrank 1: " << Read(log1));
  REQUIRE(failed == 1);
  CHECK_THAT(Read(log0), Catch::Contains("rank 1 stopped beating"));
  REQUIRE_FALSE(fs::exists(two + "/policy/v40"));  // killed mid-run

  // Restarted (as a StatefulSet restarts its pods), both resume and finish
  // with the weights of the uninterrupted one-process run.
  port = FreePort();
  std::vector<std::string> resume = args(two);
  resume.push_back("--resume");
  r1 = SpawnRank(resume, 1, port, log1);
  r0 = SpawnRank(resume, 0, port, log0);
  const int exit0 = WaitExit(r0, std::chrono::seconds(300));
  const int exit1 = WaitExit(r1, std::chrono::seconds(30));
  INFO("rank 0 resumed: " << Read(log0) << "\nrank 1: " << Read(log1));
  CHECK(exit0 == 0);
  CHECK(exit1 == 0);
  // Rank 0 killed: its store goes with it, and rank 1 says so.
  const std::string three = dir.path() + "/three";
  port = FreePort();
  r1 = SpawnRank(args(three), 1, port, dir.path() + "/three1.log");
  r0 = SpawnRank(args(three), 0, port, dir.path() + "/three0.log");
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (!fs::exists(three + "/checkpoints/step-3") && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  kill(r0, SIGKILL);
  CHECK(WaitExit(r0, std::chrono::seconds(10)) == 128 + SIGKILL);
  CHECK(WaitExit(r1, std::chrono::seconds(60)) == 1);
  CHECK_THAT(Read(dir.path() + "/three1.log"), Catch::Contains("rank 0 is gone"));

  CHECK(CheckSameWeights(straight, two + "/policy/v40/adapter_model.safetensors") == 16);  // default targets
}

// What `cmd` prints on stdout.
std::string Output(const std::string& cmd) {
  std::string out;
  FILE* f = popen(cmd.c_str(), "r");
  if (f == nullptr) return out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof(buf), f)) > 0;) out.append(buf, n);
  pclose(f);
  return out;
}

TEST_CASE("serving ranks: a follower serves health and metrics, and ends with rank 0",
          "[trainer][process]") {
  TempDir dir;
  const std::string m = MakeModel(dir);
  auto args = [&](const std::string& extra) {
    std::vector<std::string> a = {kBin + "/crl-trainer", "--model", m, "--out_dir", dir.path() + "/out",
                                  "--lora", "--lora_rank", "4", "--listen", "127.0.0.1:0",
                                  "--metrics_listen", "127.0.0.1:0", "--drain_delay", "0s",
                                  "--log_level", "warning"};
    if (!extra.empty()) a.push_back(extra);
    return a;
  };
  const std::string log0 = dir.path() + "/rank0.log", log1 = dir.path() + "/rank1.log";
  const int port = FreePort();
  pid_t r1 = SpawnRank(args("--serve_followers"), 1, port, log1);
  pid_t r0 = SpawnRank(args(""), 0, port, log0);
  // The follower's listening line names its metrics port; crl_ready turns
  // 1 once it has joined the group and loaded the model.
  std::string ready;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (ready.find("crl_ready 1") == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const std::string text = Read(log1);
    const size_t at = text.find("metrics=127.0.0.1:");
    if (at == std::string::npos) continue;
    const std::string metrics_port = text.substr(at + 18, text.find_first_not_of("0123456789", at + 18) - at - 18);
    ready = Output("curl -s http://127.0.0.1:" + metrics_port + "/metrics");
  }
  // The follower can be ready before rank 0 has finished starting (its
  // trainer built, its server up): what is tested is stopping a serving
  // rank 0, so wait for its listening line too.
  while (Read(log0).find(" listening grpc=") == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  INFO("rank 1: " << Read(log1) << "\nrank 0: " << Read(log0));
  CHECK_THAT(ready, Catch::Contains("crl_ready 1"));
  CHECK_THAT(ready, Catch::Contains("crl_build_info{component=\"crl-trainer\""));
  CHECK_THAT(Read(log0), Catch::Contains(" listening grpc="));
  // Rank 0 stopped (SIGTERM): it tells the follower, and both end cleanly.
  kill(r0, SIGTERM);
  CHECK(WaitExit(r0, std::chrono::seconds(60)) == 0);
  CHECK(WaitExit(r1, std::chrono::seconds(30)) == 0);
  CHECK_THAT(Read(log1), !Catch::Contains("ERROR") && !Catch::Contains(" E "));
}

}  // namespace
}  // namespace crl::policy
