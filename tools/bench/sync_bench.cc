// crl-bench-sync: how long a policy version takes to go from the trainer to
// the sampler (weight sync; issue 42, item 3). The trainer takes a step and
// publishes the version as crl-trainer does (a directory on the policy
// volume: full weights, or a LoRA adapter over the base); the sampler side
// loads it as crl-sampler's in-process backend does (a PolicyLoader onto its
// device, which keeps the base a LoRA adapter attaches to; then a generation
// engine) and samples one token. Each part is
// timed, against the floor of moving the same bytes straight from the
// trainer's device to the sampler's. The two sides on two GPUs (apart, as
// veRL and OpenRLHF place them) or on one (colocated). Not counted: the
// version's announcement (a gRPC stream message) and the wait for a request
// that needs it (crl-sampler loads a version when a request asks for it).
//
//   crl-bench-sync --preset qwen2.5-0.5b --mode full --trainer_device cuda:1 --sampler_device cuda:0
//   crl-bench-sync --preset embedded --trainer_device cpu --sampler_device cpu
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "common/file.h"
#include "common/memory.h"
#include "common/options.h"
#include "lib/policy/engine.h"
#include "lib/policy/loader.h"
#include "lib/policy/model.h"
#include "services/trainer/distributed.h"
#include "services/trainer/trainer.h"
#include "tools/bench/policy_presets.h"
#include "tools/bench/trainer_fixture.h"

#ifdef CRL_BENCH_CUDA
#include <torch/cuda.h>
#endif

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

void Stage(const std::string& what) { std::fprintf(stderr, "crl-bench-sync: %s\n", what.c_str()); }

// Waits for a device's queued work, so a stage's time is its own.
void Sync(const torch::Device& d) {
#ifdef CRL_BENCH_CUDA
  if (d.is_cuda()) torch::cuda::synchronize(d.index());
#else
  (void)d;
#endif
}

int64_t DirectoryBytes(const std::string& dir) {
  int64_t n = 0;
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(dir, ec)) {
    if (e.is_regular_file(ec)) n += static_cast<int64_t>(e.file_size(ec));
  }
  return n;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double Seconds(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace

int main(int argc, char** argv) {
  crl::RetainFreedHeap();
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  std::string preset = "qwen2.5-0.5b", mode = "full", trainer_device = "auto", sampler_device = "auto";
  std::string dir_flag, json_out;
  int versions = 3, sequences = 8, prompt_len = 128, completion_len = 128, max_len = 1024;
  bool cuda_graphs = true;
  crl::OptionSet flags("crl-bench-sync", "Seconds from a trainer's step to the sampler serving its version.");
  flags.Add("preset", &preset, "embedded, qwen2.5-0.5b, qwen2.5-1.5b");
  flags.Add("mode", &mode, "full or lora (rank 16 on every projection)");
  flags.Add("trainer_device", &trainer_device, "auto, cpu, cuda, cuda:N");
  flags.Add("sampler_device", &sampler_device, "auto, cpu, cuda, cuda:N (the trainer's: colocated)");
  flags.Add("versions", &versions, "versions published and loaded (the median is reported)");
  flags.Add("sequences", &sequences, "sequences of the step before each version");
  flags.Add("prompt_len", &prompt_len, "prompt tokens per sequence of that step");
  flags.Add("completion_len", &completion_len, "completion tokens per sequence of that step");
  flags.Add("max_len", &max_len, "the sampler engine's longest sequence");
  flags.Add("cuda_graphs", &cuda_graphs, "the engine captures decode steps as CUDA graphs (on a CUDA device)");
  flags.Add("dir", &dir_flag, "the policy volume (empty: a fresh temporary directory, removed at the end)");
  flags.Add("json", &json_out, "also write the results here");
  if (int rc = flags.ParseForMain(argc, argv); rc >= 0) return rc;

  auto config = crl::bench::PolicyPreset(preset);
  auto sampler_place = crl::policy::ResolvePlacement(sampler_device, "auto");
  if (!config.ok() || !sampler_place.ok()) {
    std::fprintf(stderr, "%s\n", (!config.ok() ? config.status() : sampler_place.status()).ToString().c_str());
    return 2;
  }
  const std::string dir =
      dir_flag.empty() ? (fs::temp_directory_path() / absl::StrCat("crl-bench-sync-", getpid())).string() : dir_flag;
  // Saved, and so published, in bfloat16, as released checkpoints are.
  config->torch_dtype = "bfloat16";
  if (!crl::bench::WriteRandomModel(*config, dir + "/model").ok()) {
    std::fprintf(stderr, "cannot write the random model under %s\n", dir.c_str());
    return 1;
  }
  crl::trainer::TrainerOptions o;
  o.model_dir = dir + "/model";
  o.out_dir = dir + "/out";
  o.device = trainer_device;
  if (mode == "lora") crl::bench::UseBenchLora(&o);
  o.optimizer.lr = 1e-6;
  o.max_seq_len = prompt_len + completion_len;
  o.keep_published = 2;
  auto group = crl::trainer::ConnectDistributed(crl::trainer::DistributedOptions());
  if (!group.ok()) {
    std::fprintf(stderr, "%s\n", group.status().ToString().c_str());
    return 1;
  }
  Stage("creating the trainer");
  auto trainer = crl::trainer::Trainer::Create(o, crl::RealClock::Get(), group->get());
  if (!trainer.ok()) {
    std::fprintf(stderr, "%s\n", trainer.status().ToString().c_str());
    return 1;
  }
  const torch::Device trainer_dev = (*trainer)->model().device();
  std::vector<crl::trainer::TrainSequence> batch =
      crl::bench::RandomGroups(sequences, prompt_len, completion_len, config->vocab_size);
  crl::policy::EngineOptions engine_options;
  engine_options.max_batch = 1;
  engine_options.max_len = max_len;
  engine_options.cuda_graphs = cuda_graphs;
  crl::policy::GenerationRequest request;
  for (int t = 0; t < 16; ++t) request.prompt.push_back(t * 7919 % config->vocab_size);
  request.params.max_new_tokens = 1;

  using Clock = std::chrono::steady_clock;
  std::vector<double> publish_s, load_s, engine_s, token_s, total_s;
  int64_t bytes = 0;
  // One more version than measured: the first loads code and kernels once
  // (and, for LoRA, the base the sampler keeps for every later adapter).
  crl::policy::PolicyLoader loader(*sampler_place);
  for (int v = 0; v <= versions; ++v) {
    auto lp = (*trainer)->Logprobs(batch);
    if (!lp.ok()) {
      std::fprintf(stderr, "%s\n", lp.status().ToString().c_str());
      return 1;
    }
    for (int i = 0; i < sequences; ++i) batch[i].old_logprobs = (*lp)[i];
    auto step = (*trainer)->Train(batch, crl::trainer::Objective::kPolicyGradient);
    if (!step.ok()) {
      std::fprintf(stderr, "%s\n", step.status().ToString().c_str());
      return 1;
    }
    Sync(trainer_dev);
    const auto t0 = Clock::now();
    auto published = (*trainer)->Publish();
    if (!published.ok()) {
      std::fprintf(stderr, "%s\n", published.status().ToString().c_str());
      return 1;
    }
    const auto t1 = Clock::now();
    auto loaded = o.lora ? loader.Load(o.model_dir, published->path) : loader.Load(published->path, "");
    if (!loaded.ok()) {
      std::fprintf(stderr, "%s\n", loaded.status().ToString().c_str());
      return 1;
    }
    Sync(sampler_place->device);
    const auto t2 = Clock::now();
    auto engine = crl::policy::GenerationEngine::Start(std::move(*loaded), engine_options);
    if (!engine.ok()) {
      std::fprintf(stderr, "%s\n", engine.status().ToString().c_str());
      return 1;
    }
    const auto t3 = Clock::now();
    auto token = (*engine)->Generate(request, crl::RequestContext::Background());
    if (!token.ok()) {
      std::fprintf(stderr, "%s\n", token.status().ToString().c_str());
      return 1;
    }
    const auto t4 = Clock::now();
    bytes = DirectoryBytes(published->path);
    Stage(absl::StrCat("version ", published->version, ": publish ", Seconds(t0, t1), " s, load ", Seconds(t1, t2),
                       " s, engine ", Seconds(t2, t3), " s, first token ", Seconds(t3, t4), " s (", bytes,
                       " bytes)", v == 0 ? ", warm-up" : ""));
    if (v == 0) continue;
    publish_s.push_back(Seconds(t0, t1));
    load_s.push_back(Seconds(t1, t2));
    engine_s.push_back(Seconds(t2, t3));
    token_s.push_back(Seconds(t3, t4));
    total_s.push_back(Seconds(t0, t4));
  }
  // The floor: the same bytes moved straight from the trainer's device to
  // the sampler's (a device-to-device copy; on one device, a copy within it).
  std::vector<double> floor_s;
  {
    torch::Tensor from = torch::empty({std::max<int64_t>(bytes, 1)}, torch::TensorOptions(torch::kUInt8).device(trainer_dev));
    for (int i = 0; i < 4; ++i) {
      Sync(trainer_dev);
      const auto a = Clock::now();
      torch::Tensor to = from.to(sampler_place->device, /*non_blocking=*/false, /*copy=*/true);
      Sync(sampler_place->device);
      if (i > 0) floor_s.push_back(Seconds(a, Clock::now()));
    }
  }
  const double floor = Median(floor_s);
  json r = {{"implementation", "crl (LibTorch " TORCH_VERSION ")"},
            {"preset", preset},
            {"mode", mode},
            {"trainer_device", trainer_dev.str()},
            {"sampler_device", sampler_place->device.str()},
            {"colocated", trainer_dev == sampler_place->device},
            {"versions", versions},
            {"version_bytes", bytes},
            {"publish_seconds", Median(publish_s)},
            {"load_seconds", Median(load_s)},
            {"engine_start_seconds", Median(engine_s)},
            {"first_token_seconds", Median(token_s)},
            {"sync_seconds", Median(total_s)},
            {"floor_seconds", floor},
            {"link_gb_per_second", floor > 0 ? bytes / floor / 1e9 : 0.0},
            {"sync_over_floor", floor > 0 ? Median(total_s) / floor : 0.0}};
  std::printf("%s\n", r.dump().c_str());
  if (!json_out.empty()) (void)crl::WriteStringToFile(json_out, r.dump(2) + "\n");
  if (dir_flag.empty()) {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  return 0;
}
