// crl-bench-sampler: generation throughput of crl's in-process engine
// (lib/policy/engine.h, what crl-sampler runs) on a random model of a given
// shape: `batch` concurrent requests of `prompt_len` random tokens, each
// sampling `new_tokens` tokens at temperature 1 (no stop tokens), timed
// from submission to the last token (docs/benchmarks.md).
// tools/bench/policy_torch_bench.py generate runs the same work in PyTorch.
//
//   crl-bench-sampler --preset qwen2.5-0.5b --batch 8 --prompt_len 512 --new_tokens 512
//   crl-bench-sampler --preset embedded --device cpu --batch 8 --prompt_len 256 --new_tokens 128
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>
#include <vector>

#include "common/file.h"
#include "common/memory.h"
#include "common/options.h"
#include "lib/policy/engine.h"
#include "lib/policy/loader.h"
#include "tools/bench/policy_presets.h"

int main(int argc, char** argv) {
  crl::RetainFreedHeap();
  std::string preset = "qwen2.5-0.5b", device = "auto", dtype = "auto", json_out;
  int batch = 8, prompt_len = 512, new_tokens = 512, repeats = 2, top_logprobs = 0;
  bool cuda_graphs = true, check = false;
  int prefill_tokens = crl::policy::EngineOptions{}.prefill_tokens;
  crl::OptionSet flags("crl-bench-sampler", "Generation tokens/s of crl's engine.");
  flags.Add("preset", &preset, "embedded, qwen2.5-0.5b, qwen2.5-1.5b");
  flags.Add("device", &device, "auto, cpu, cuda");
  flags.Add("dtype", &dtype, "auto (bfloat16 on CUDA), float32, bfloat16");
  flags.Add("batch", &batch, "concurrent requests");
  flags.Add("prompt_len", &prompt_len, "prompt tokens");
  flags.Add("new_tokens", &new_tokens, "tokens sampled per request");
  flags.Add("repeats", &repeats, "timed runs (the first run before them warms up)");
  flags.Add("top_logprobs", &top_logprobs, "every request also asks for this many top tokens a position");
  flags.Add("prefill_tokens", &prefill_tokens, "padded prompt tokens per prefill pass");
  flags.Add("cuda_graphs", &cuda_graphs, "replay decode steps from CUDA graphs (on a CUDA device)");
  flags.Add("check", &check,
            "also generate the same requests with an engine without CUDA graphs and report where the "
            "tokens first differ and the largest log-probability difference before that");
  flags.Add("json", &json_out, "also write the results here");
  if (int rc = flags.ParseForMain(argc, argv); rc >= 0) return rc;
  auto config = crl::bench::PolicyPreset(preset);
  auto place = crl::policy::ResolvePlacement(device, dtype);
  if (!config.ok() || !place.ok()) {
    std::fprintf(stderr, "%s\n", (!config.ok() ? config.status() : place.status()).ToString().c_str());
    return 2;
  }
  auto model = crl::policy::CausalLm::Init(*config, 1, place->device, place->dtype);
  if (!model.ok()) return 1;
  std::shared_ptr<crl::policy::CausalLm> shared(std::move(*model));
  crl::policy::EngineOptions engine_options;
  engine_options.max_batch = batch;
  engine_options.max_len = prompt_len + new_tokens;
  engine_options.cuda_graphs = cuda_graphs;
  engine_options.prefill_tokens = prefill_tokens;
  auto engine = crl::policy::GenerationEngine::Start(shared, engine_options);
  if (!engine.ok()) {
    std::fprintf(stderr, "%s\n", engine.status().ToString().c_str());
    return 1;
  }
  std::mt19937 rng(3);
  std::vector<crl::policy::GenerationRequest> requests(batch);
  for (int i = 0; i < batch; ++i) {
    for (int t = 0; t < prompt_len; ++t) requests[i].prompt.push_back(rng() % config->vocab_size);
    requests[i].params.temperature = 1.0;
    requests[i].params.max_new_tokens = new_tokens;
    requests[i].params.seed = i;
    requests[i].top_logprobs = top_logprobs;
  }
  std::vector<crl::policy::Generation> last(batch);
  auto run_on = [&](crl::policy::GenerationEngine& e) -> double {
    std::vector<std::thread> threads;
    std::vector<char> ok(batch, 0);  // not vector<bool>: threads write their own element
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < batch; ++i) {
      threads.emplace_back([&, i] {
        auto g = e.Generate(requests[i], crl::RequestContext::Background());
        if (!g.ok()) {
          std::fprintf(stderr, "request %d: %s\n", i, g.status().ToString().c_str());
        } else if (static_cast<int>((*g)[0].tokens.size()) != new_tokens) {
          std::fprintf(stderr, "request %d: %zu tokens, not %d\n", i, (*g)[0].tokens.size(), new_tokens);
        } else {
          last[i] = (*g)[0];
          ok[i] = 1;
        }
      });
    }
    for (auto& t : threads) t.join();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (char b : ok) {
      if (!b) return -1;
    }
    return s;
  };
  auto run = [&]() { return run_on(**engine); };
  if (run() < 0) {
    std::fprintf(stderr, "a request failed\n");
    return 1;
  }
  std::vector<double> times;
  for (int r = 0; r < std::max(1, repeats); ++r) times.push_back(run());
  std::sort(times.begin(), times.end());
  const double s = times[times.size() / 2];
  nlohmann::json j = {{"implementation", "crl engine (LibTorch " TORCH_VERSION ")"},
                      {"preset", preset}, {"batch", batch}, {"prompt_len", prompt_len},
                      {"new_tokens", new_tokens}, {"top_logprobs", top_logprobs}, {"seconds", s},
                      {"tokens_per_second", double(batch) * new_tokens / s},
                      {"cuda_graphs", (*engine)->decode_graphs()}};
  if (top_logprobs > 0) {  // what came back: a list a token, each of the size asked for
    size_t lists = 0, wrong = 0;
    for (const auto& g : last) {
      lists += g.top_logprobs.size();
      for (const auto& t : g.top_logprobs) wrong += t.size() != static_cast<size_t>(top_logprobs);
    }
    j["top_lists"] = lists;
    j["top_lists_wrong_size"] = wrong;
  }
  if (check) {
    // The same requests (same seeds) op by op: a sampled token depends only
    // on the logits and its seed, so the two agree until rounding differences
    // between the two paths flip a token; from there the sequences differ.
    std::vector<crl::policy::Generation> graphed = last;
    engine_options.cuda_graphs = false;
    auto plain = crl::policy::GenerationEngine::Start(shared, engine_options);
    if (!plain.ok() || run_on(**plain) < 0) {
      std::fprintf(stderr, "the check's engine failed\n");
      return 1;
    }
    int64_t agree = 0, first_min = new_tokens;
    double max_diff = 0;
    for (int i = 0; i < batch; ++i) {
      int t = 0;
      while (t < new_tokens && graphed[i].tokens[t] == last[i].tokens[t]) {
        max_diff = std::max(max_diff, double(std::abs(graphed[i].logprobs[t] - last[i].logprobs[t])));
        ++t;
      }
      agree += t;
      first_min = std::min<int64_t>(first_min, t);
    }
    j["check_tokens_before_divergence_mean"] = double(agree) / batch;
    j["check_tokens_before_divergence_min"] = first_min;
    j["check_max_logprob_diff"] = max_diff;
  }
  std::printf("%s\n", j.dump().c_str());
  if (!json_out.empty()) (void)crl::WriteStringToFile(json_out, j.dump(2) + "\n");
  return 0;
}
