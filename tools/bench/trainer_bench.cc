// crl-bench-trainer: one policy-gradient (GRPO) step of crl's trainer on a
// random model of a given shape, and no-gradient log-probabilities of the
// same batch: tokens per second, step seconds, peak GPU memory and model
// FLOPs utilisation (docs/benchmarks.md). tools/bench/policy_torch_bench.py
// runs the same step in eager PyTorch and with torch.compile.
//
//   crl-bench-trainer --preset qwen2.5-0.5b --mode full --sequences 8 --prompt_len 512 --completion_len 512
//   crl-bench-trainer --preset embedded --device cpu
//   torchrun --no_python --nproc_per_node 2 crl-bench-trainer --dist_backend nccl --sequences 16
//   crl-bench-trainer ... --weights_out ref.pt, then under torchrun ... --weights_against ref.pt:
//     how far two ranks' weights after the same steps are from one process's
#include <dlfcn.h>
#include <execinfo.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/file.h"
#include "common/memory.h"
#include "common/options.h"
#include "common/paths.h"
#include "lib/policy/config.h"
#include "lib/policy/model.h"
#include "services/trainer/distributed.h"
#include "services/trainer/trainer.h"
#include "tools/bench/policy_presets.h"
#include "tools/bench/trainer_fixture.h"
#include "torch/serialize.h"

#ifdef CRL_BENCH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif
#include <torch/csrc/autograd/profiler_kineto.h>

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using crl::policy::ModelConfig;

// A crash on a remote GPU machine has no debugger: say where it happened.
// glibc's backtrace() stops at the signal frame when the faulting pc has no
// unwind information (a jump through a bad pointer, a JIT-compiled or
// stripped kernel stub), so also print the faulting pc, the thread, and every
// stack word near sp that points into a loaded object (a heuristic stack).
void DescribeAddress(const char* what, uintptr_t a) {
  Dl_info di{};
  char buf[512];
  int n;
  if (a != 0 && dladdr(reinterpret_cast<void*>(a), &di) && di.dli_fname) {
    n = std::snprintf(buf, sizeof buf, "  %s %#lx %s+%#lx (%s)\n", what, static_cast<unsigned long>(a),
                      di.dli_sname ? di.dli_sname : "?",
                      static_cast<unsigned long>(a - reinterpret_cast<uintptr_t>(
                                                         di.dli_saddr ? di.dli_saddr : di.dli_fbase)),
                      di.dli_fname);
  } else {
    n = std::snprintf(buf, sizeof buf, "  %s %#lx (in no loaded object)\n", what, static_cast<unsigned long>(a));
  }
  if (n > 0) (void)!write(STDERR_FILENO, buf, std::min<size_t>(n, sizeof buf - 1));
}

void OnCrash(int sig, siginfo_t* info, void* context) {
  uintptr_t pc = 0, sp = 0;
#if defined(__x86_64__)
  const auto* uc = static_cast<const ucontext_t*>(context);
  pc = uc->uc_mcontext.gregs[REG_RIP];
  sp = uc->uc_mcontext.gregs[REG_RSP];
#elif defined(__aarch64__)
  const auto* uc = static_cast<const ucontext_t*>(context);
  pc = uc->uc_mcontext.pc;
  sp = uc->uc_mcontext.sp;
#else
  (void)context;
#endif
  char buf[256];
  const int n = std::snprintf(buf, sizeof buf,
                              "crl-bench-trainer: signal %d (code %d) at address %p in thread %ld "
                              "(main thread %d)\n",
                              sig, info->si_code, info->si_addr, static_cast<long>(syscall(SYS_gettid)),
                              static_cast<int>(getpid()));
  if (n > 0) (void)!write(STDERR_FILENO, buf, std::min<size_t>(n, sizeof buf - 1));
  DescribeAddress("pc", pc);
  void* frames[64];
  const int depth = backtrace(frames, 64);
  backtrace_symbols_fd(frames, depth, STDERR_FILENO);
  // The handler is reset (SA_RESETHAND): reading past the stack's end kills
  // the process with the report above already written.
  const char head[] = "  stack words that point into loaded objects:\n";
  (void)!write(STDERR_FILENO, head, sizeof head - 1);
  const auto* words = reinterpret_cast<const uintptr_t*>(sp);
  for (int i = 0, shown = 0; sp != 0 && i < 1024 && shown < 48; ++i) {
    Dl_info di{};
    if (words[i] > 4096 && dladdr(reinterpret_cast<void*>(words[i]), &di) && di.dli_sname) {
      DescribeAddress("sp+", words[i]);
      ++shown;
    }
  }
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

void PrintStackOnCrash() {
  // Its own stack, so that a stack overflow is reported too.
  static std::vector<char> alt(1 << 16);
  stack_t ss{};
  ss.ss_sp = alt.data();
  ss.ss_size = alt.size();
  sigaltstack(&ss, nullptr);
  struct sigaction sa {};
  sa.sa_sigaction = OnCrash;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESETHAND;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT}) sigaction(sig, &sa, nullptr);
}

// The library this process's std::filesystem resolves to. It must be
// libstdc++: PyTorch's wheels export private copies from libtorch*.so
// (pytorch/pytorch#133437), and libtorch.so's remove_all calls through a
// null pointer. tools/gpu/CMakeLists.txt links libstdc++ first for this.
std::string FilesystemLibrary() {
  std::uintmax_t (*remove_all)(const fs::path&, std::error_code&) = &fs::remove_all;
  Dl_info di{};
  if (!dladdr(reinterpret_cast<void*>(remove_all), &di) || !di.dli_fname) return "?";
  return di.dli_fname;
}

void Stage(const std::string& what) {
  std::fprintf(stderr, "crl-bench-trainer: %s\n", what.c_str());
}

bool g_peak_memory = true;

void ResetPeak() {
#ifdef CRL_BENCH_CUDA
  if (g_peak_memory) c10::cuda::CUDACachingAllocator::resetPeakStats(0);
#endif
}

double PeakGiB() {
#ifdef CRL_BENCH_CUDA
  if (!g_peak_memory) return 0;
  auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(0);
  return stats.allocated_bytes[0].peak / double(1 << 30);  // StatType::AGGREGATE
#else
  return 0;
#endif
}

// Kineto (LibTorch's profiler, the one behind torch.profiler) around `run`;
// the trace is written in the Chrome trace format torch.profiler's
// export_chrome_trace writes, so tools/bench/trace_summary.py reads both.
bool Profile(const std::string& path, const std::function<bool()>& run) {
  namespace tpi = torch::profiler::impl;
  tpi::ProfilerConfig config(tpi::ProfilerState::KINETO);
  std::set<tpi::ActivityType> activities = {tpi::ActivityType::CPU};
#ifdef CRL_BENCH_CUDA
  activities.insert(tpi::ActivityType::CUDA);
#endif
  try {
    torch::autograd::profiler::prepareProfiler(config, activities);
    torch::autograd::profiler::enableProfiler(config, activities);
  } catch (const std::exception& e) {
    Stage(std::string("no profile: ") + e.what());
    return run();
  }
  const bool ok = run();
#ifdef CRL_BENCH_CUDA
  torch::cuda::synchronize();
#endif
  try {
    torch::autograd::profiler::disableProfiler()->save(path);
    Stage("profile written to " + path);
  } catch (const std::exception& e) {  // Debian's LibTorch is built without Kineto
    Stage(std::string("no profile: ") + e.what());
  }
  return ok;
}

// Model FLOPs of one token: 2 per weight per matmul forward (the output
// embedding included, the input lookup not), backward twice that for
// weights that train and once for frozen ones; causal attention adds
// 4 * layers * heads * head_dim * context / 2 forward.
double FlopsPerToken(const ModelConfig& c, bool lora, double context, bool training) {
  const double q = double(c.num_attention_heads) * c.head_dim, kv = double(c.num_key_value_heads) * c.head_dim;
  const double matmul = c.num_hidden_layers * (c.hidden_size * (2 * q + 2 * kv) + 3.0 * c.hidden_size * c.intermediate_size) +
                        double(c.vocab_size) * c.hidden_size;
  const double attention = 2.0 * c.num_hidden_layers * q * context;  // QK^T and AV, causal half
  const double forward = 2 * matmul + 2 * attention;
  if (!training) return forward;
  return forward * (lora ? 2.0 : 3.0);
}

// Every trainable weight, flattened into one float32 vector on the CPU (the
// same order in every process: the model's parameter order).
torch::Tensor FlatTrainable(crl::trainer::Trainer& trainer) {
  std::vector<torch::Tensor> parts;
  for (auto& [name, w] : trainer.Trainable()) parts.push_back(w.detach().to(torch::kCPU, torch::kFloat).flatten());
  return torch::cat(parts);
}

// How far this run's weights are from a reference run's (`ref`: its initial
// and final weights): the largest difference at the start (0 when both began
// from the same weights) and at the end, and the relative difference of the
// two updates, |(w1 - w0) - (r1 - r0)| / |r1 - r0|.
json CompareWeights(const torch::Tensor& w0, const torch::Tensor& w1, const std::vector<torch::Tensor>& ref) {
  const torch::Tensor ours = w1 - w0, theirs = ref[1] - ref[0];
  return {{"weights_init_max_abs_diff", (w0 - ref[0]).abs().max().item<double>()},
          {"weights_max_abs_diff", (w1 - ref[1]).abs().max().item<double>()},
          {"update_norm", theirs.norm().item<double>()},
          {"update_rel_diff", (ours - theirs).norm().item<double>() / std::max(1e-30, theirs.norm().item<double>())}};
}

}  // namespace

int main(int argc, char** argv) {
  crl::RetainFreedHeap();
  PrintStackOnCrash();
  // Each result line reaches a pipe (tee) as soon as it is printed.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  std::string preset = "qwen2.5-0.5b", config_path, device = "auto", precision = "auto", mode = "full";
  std::string json_out, profile_path, dist_backend = "gloo", weights_out, weights_against;
  int sequences = 8, prompt_len = 512, completion_len = 512, steps = 5, warmup = 2;
  bool checkpointing = false;
  double peak_tflops = 989.4;
  int64_t micro_batch_tokens = 16384;
  double reduce_bucket_mb = crl::trainer::TrainerOptions().reduce_bucket_mb;
  crl::OptionSet flags("crl-bench-trainer", "One GRPO step and logprobs of crl's trainer, timed.");
  flags.Add("preset", &preset, "embedded, qwen2.5-0.5b, qwen2.5-1.5b");
  flags.Add("model_config", &config_path, "a config.json instead of a preset");
  flags.Add("device", &device, "auto, cpu, cuda");
  flags.Add("peak_memory", &g_peak_memory, "read peak GPU memory from the CUDA caching allocator");
  flags.Add("precision", &precision, "auto, float32, bfloat16");
  flags.Add("mode", &mode, "full or lora (rank 16 on every projection)");
  flags.Add("sequences", &sequences, "sequences per step (groups of 4)");
  flags.Add("prompt_len", &prompt_len, "prompt tokens per sequence");
  flags.Add("completion_len", &completion_len, "completion tokens per sequence");
  flags.Add("steps", &steps, "timed steps");
  flags.Add("warmup", &warmup, "untimed steps first");
  flags.Add("micro_batch_tokens", &micro_batch_tokens, "rows x length per micro-batch");
  flags.Add("activation_checkpointing", &checkpointing, "recompute layers in the backward pass");
  flags.Add("dist_backend", &dist_backend, "under a launcher: gloo or nccl");
  flags.Add("reduce_bucket_mb", &reduce_bucket_mb,
            "under a launcher: MiB per gradient bucket summed during the backward (0: one exchange after it)");
  flags.Add("peak_tflops", &peak_tflops, "the device's dense bf16 peak, for MFU (H100/H200 SXM: 989.4)");
  flags.Add("json", &json_out, "also write the results here");
  flags.Add("weights_out", &weights_out,
            "write the trainable weights before the first and after the last step here (rank 0)");
  flags.Add("weights_against", &weights_against,
            "compare the weights after the same steps with a --weights_out file (rank 0)");
  flags.Add("profile", &profile_path,
            "after the timed steps, profile two more steps and write a Chrome trace here");
  if (int rc = flags.ParseForMain(argc, argv); rc >= 0) return rc;
  if (const std::string lib = FilesystemLibrary(); lib.find("libtorch") != std::string::npos) {
    Stage(absl::StrCat("warning: std::filesystem resolves to ", lib,
                       ", LibTorch's private copy, not libstdc++'s (link libstdc++ first: "
                       "tools/gpu/CMakeLists.txt); its remove_all crashes"));
  }

  auto config = config_path.empty() ? crl::bench::PolicyPreset(preset) : crl::policy::LoadModelConfig(config_path);
  if (!config.ok()) {
    std::fprintf(stderr, "%s\n", config.status().ToString().c_str());
    return 2;
  }
  config->torch_dtype = "float32";
  const std::string dir = (fs::temp_directory_path() / absl::StrCat("crl-bench-trainer-", getpid())).string();
  if (!crl::bench::WriteRandomModel(*config, dir + "/model").ok()) {
    std::fprintf(stderr, "cannot write the random model\n");
    return 1;
  }
  crl::trainer::TrainerOptions o;
  o.model_dir = dir + "/model";
  o.out_dir = dir + "/out";
  o.device = device;
  o.precision = precision;
  if (mode == "lora") crl::bench::UseBenchLora(&o);
  o.optimizer.lr = 1e-6;
  o.micro_batch_tokens = micro_batch_tokens;
  o.max_seq_len = prompt_len + completion_len;
  o.activation_checkpointing = checkpointing;
  o.reduce_bucket_mb = reduce_bucket_mb;
  // Data parallel under a launcher (torchrun's RANK, WORLD_SIZE, LOCAL_RANK,
  // MASTER_ADDR, MASTER_PORT): every rank takes its shard of the same global
  // batch, as crl-trainer's ranks do; tokens/s counts the global batch.
  crl::trainer::DistributedOptions dist;
  dist.backend = dist_backend;
  if (absl::Status s = crl::trainer::ApplyLauncherEnvironment(&dist, std::getenv); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 2;
  }
  Stage(absl::StrCat("joining the process group (rank ", dist.rank, " of ", dist.world_size, ")"));
  auto group = crl::trainer::ConnectDistributed(dist);
  if (!group.ok()) {
    std::fprintf(stderr, "%s\n", group.status().ToString().c_str());
    return 1;
  }
  if (dist.world_size > 1 && (device == "auto" || device == "cuda") && torch::cuda::is_available()) {
    o.device = absl::StrCat("cuda:", dist.gpu());
  }
  Stage("creating the trainer");
  auto trainer = crl::trainer::Trainer::Create(o, crl::RealClock::Get(), group->get());
  if (!trainer.ok()) {
    std::fprintf(stderr, "%s\n", trainer.status().ToString().c_str());
    return 1;
  }
  // Groups of four over random tokens; behaviour logprobs near the policy's.
  std::vector<crl::trainer::TrainSequence> batch =
      crl::bench::RandomGroups(sequences, prompt_len, completion_len, config->vocab_size);
  Stage("behaviour log-probabilities");
  auto lp = (*trainer)->Logprobs(batch);
  if (!lp.ok()) {
    std::fprintf(stderr, "%s\n", lp.status().ToString().c_str());
    return 1;
  }
  for (int i = 0; i < sequences; ++i) {
    for (float v : (*lp)[i]) batch[i].old_logprobs.push_back(v + 0.01f);
  }
  const double tokens = double(sequences) * (prompt_len + completion_len);
  auto now = [] { return std::chrono::steady_clock::now(); };
  auto secs = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };

  const bool weigh = dist.rank == 0 && !(weights_out.empty() && weights_against.empty());
  torch::Tensor w0 = weigh ? FlatTrainable(**trainer) : torch::Tensor();
  Stage("warm-up steps");
  for (int i = 0; i < warmup; ++i) {
    auto st = (*trainer)->Train(batch, crl::trainer::Objective::kPolicyGradient);
    if (!st.ok()) {
      std::fprintf(stderr, "%s\n", st.status().ToString().c_str());
      return 1;
    }
    Stage(absl::StrCat("warm-up step ", i + 1, " of ", warmup, ": loss ", st->loss, ", grad norm ", st->grad_norm));
  }
  Stage("timed steps");
  ResetPeak();
  std::vector<double> step_seconds;
  for (int i = 0; i < steps; ++i) {
    auto t0 = now();
    auto st = (*trainer)->Train(batch, crl::trainer::Objective::kPolicyGradient);
    if (!st.ok()) {
      std::fprintf(stderr, "%s\n", st.status().ToString().c_str());
      return 1;
    }
    step_seconds.push_back(secs(t0, now()));
    Stage(absl::StrCat("timed step ", i + 1, " of ", steps, ": ", step_seconds.back(), " s"));
  }
  const double train_peak = PeakGiB();
  json weights = json::object();
  if (weigh) {
    const torch::Tensor w1 = FlatTrainable(**trainer);
    weights["weights_steps"] = warmup + steps;
    if (!weights_out.empty()) torch::save(std::vector<torch::Tensor>{w0, w1}, weights_out);
    if (!weights_against.empty()) {
      std::vector<torch::Tensor> ref;
      torch::load(ref, weights_against);
      if (ref.size() != 2 || ref[0].sizes() != w0.sizes()) {
        std::fprintf(stderr, "%s: not the weights of this model and mode\n", weights_against.c_str());
        return 2;
      }
      weights.update(CompareWeights(w0, w1, ref));
    }
  }
  std::sort(step_seconds.begin(), step_seconds.end());
  const double step = step_seconds[step_seconds.size() / 2];
  if (!profile_path.empty()) {
    Stage("profiled steps");
    const bool ok = Profile(profile_path, [&] {
      for (int i = 0; i < 2; ++i) {
        auto st = (*trainer)->Train(batch, crl::trainer::Objective::kPolicyGradient);
        if (!st.ok()) return false;
      }
      return true;
    });
    if (!ok) return 1;
  }
  Stage("timed log-probabilities");
  ResetPeak();
  std::vector<double> lp_seconds;
  for (int i = 0; i < std::max(1, steps); ++i) {
    auto t0 = now();
    auto timed = (*trainer)->Logprobs(batch);
    if (!timed.ok()) {
      std::fprintf(stderr, "%s\n", timed.status().ToString().c_str());
      return 1;
    }
    lp_seconds.push_back(secs(t0, now()));
  }
  const double lp_peak = PeakGiB();
  std::sort(lp_seconds.begin(), lp_seconds.end());
  const double lps = lp_seconds[lp_seconds.size() / 2];
  const double context = (prompt_len + completion_len) / 2.0;
  const double train_flops = FlopsPerToken(*config, o.lora, context, true) * tokens / step;
  const double lp_flops = FlopsPerToken(*config, false, context, false) * tokens / lps;
  const bool gpu = device != "cpu" && torch::cuda::is_available();
  const int world = dist.world_size;
  json r = {{"implementation", "crl (LibTorch " TORCH_VERSION ")"},
            {"world_size", world},
            {"dist_backend", world > 1 ? dist.backend : ""},
            {"reduce_bucket_mb", world > 1 ? reduce_bucket_mb : 0.0},
            {"preset", config_path.empty() ? preset : config_path},
            {"parameters", config->ParameterCount()},
            {"mode", mode},
            {"precision", precision},
            {"sequences", sequences},
            {"tokens_per_step", tokens},
            {"step_seconds", step},
            {"train_tokens_per_second", tokens / step},
            {"train_peak_gib", train_peak},
            {"train_mfu", gpu ? train_flops / (peak_tflops * 1e12 * world) : 0.0},
            {"steps_per_second", 1.0 / step},
            {"logprob_tokens_per_second", tokens / lps},
            {"logprob_peak_gib", lp_peak},
            {"logprob_mfu", gpu ? lp_flops / (peak_tflops * 1e12) : 0.0}};
  r.update(weights);
  (*group)->Leave();
  if (dist.rank == 0) {  // one line per measurement, whatever the world
    std::printf("%s\n", r.dump().c_str());
    if (!json_out.empty()) (void)crl::WriteStringToFile(json_out, r.dump(2) + "\n");
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  Stage("done");
  return 0;
}
