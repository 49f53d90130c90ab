// crl-bench-openai: what crl-sampler's OpenAI HTTP API adds to a request on
// loopback (docs/benchmarks.md). The same chat request is sent `--requests`
// times straight to the in-process backend (LocalBackend::Sample, what the
// gRPC service calls) and as many times as POST /v1/chat/completions to an
// OpenAiServer over the same backend through libcurl (a new connection per
// request, as crl's own OpenAI client makes them), alternating the two;
// prints the medians and their difference for each request shape.
//
//   crl-bench-openai                       # the embedded policy's shape, random weights
//   crl-bench-openai --policy DIR --device cpu --requests 200
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/options.h"
#include "common/file.h"
#include "lib/policy/bpe_trainer.h"
#include "lib/policy/model.h"
#include "common/http_client.h"
#include "services/sampler/local_backend.h"
#include "services/sampler/openai_server.h"
#include "tools/bench/policy_presets.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// A random model of the embedded policy's shape with a small BPE tokenizer:
// latency does not depend on the weights' values.
absl::Status MakePolicy(const std::string& dir) {
  auto config = crl::bench::PolicyPreset("embedded");
  if (!config.ok()) return config.status();
  auto model = crl::policy::CausalLm::Init(*config, 1, torch::kCPU, torch::kFloat32);
  if (!model.ok()) return model.status();
  if (absl::Status s = (*model)->Save(dir); !s.ok()) return s;
  crl::policy::BpeTrainOptions bpe;
  bpe.vocab_size = 400;
  auto tokenizer = crl::policy::TrainBpe(
      {"def forward(self, x):\n    return torch.relu(x)\n", "Make this kernel faster: fuse the two loops.",
       "__global__ void add(float* a, const float* b, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; }"},
      bpe);
  if (!tokenizer.ok()) return tokenizer.status();
  if (absl::Status s = crl::WriteStringToFile(dir + "/tokenizer.json", *tokenizer); !s.ok()) return s;
  return crl::WriteStringToFile(dir + "/tokenizer_config.json", crl::policy::ChatMlTokenizerConfig());
}

}  // namespace

int main(int argc, char** argv) {
  std::string policy, device = "cpu";
  int requests = 100;
  crl::OptionSet flags("crl-bench-openai", "Per-request overhead of crl-sampler's OpenAI HTTP API.");
  flags.Add("policy", &policy, "a model directory (default: a random model of the embedded policy's shape)");
  flags.Add("device", &device, "auto, cpu, cuda");
  flags.Add("requests", &requests, "requests per path and shape");
  if (int rc = flags.ParseForMain(argc, argv); rc >= 0) return rc;

  std::string temp;
  if (policy.empty()) {
    temp = (fs::temp_directory_path() / ("crl-bench-openai-" + std::to_string(getpid()))).string();
    fs::create_directories(temp);
    if (absl::Status s = MakePolicy(temp); !s.ok()) {
      std::fprintf(stderr, "%s\n", s.ToString().c_str());
      return 1;
    }
    policy = temp;
  }
  crl::sampler::LocalBackendOptions o;
  o.model_dir = policy;
  o.name = "bench";
  o.device = device;
  o.engine.max_batch = 8;
  o.engine.max_len = 512;
  auto backend = crl::sampler::LocalBackend::Create(o, nullptr);
  if (!backend.ok()) {
    std::fprintf(stderr, "%s\n", backend.status().ToString().c_str());
    return 1;
  }
  auto server = crl::sampler::OpenAiServer::Start({}, backend->get(), nullptr);
  if (!server.ok()) {
    std::fprintf(stderr, "%s\n", server.status().ToString().c_str());
    return 1;
  }
  auto http = crl::NewCurlHttpClient();
  const std::string url = "http://127.0.0.1:" + std::to_string((*server)->port()) + "/v1/chat/completions";
  const std::string prompt = "Make this kernel faster: fuse the two loops.";

  struct Shape {
    int max_tokens, n;
    bool logprobs;
  };
  int rc = 0;
  for (const Shape& shape : {Shape{1, 1, false}, Shape{16, 1, true}, Shape{16, 4, true}}) {
    crl::v1::SampleRequest direct;
    auto* m = direct.add_messages();
    m->set_role("user");
    m->set_content(prompt);
    direct.set_num_completions(shape.n);
    direct.mutable_params()->set_temperature(1.0);
    direct.mutable_params()->set_max_tokens(shape.max_tokens);
    direct.mutable_params()->set_seed(7);
    direct.mutable_params()->set_has_seed(true);
    crl::HttpRequest post;
    post.url = url;
    post.headers["Content-Type"] = "application/json";
    post.body = nlohmann::json{{"model", "bench"},
                               {"messages", {{{"role", "user"}, {"content", prompt}}}},
                               {"max_tokens", shape.max_tokens},
                               {"n", shape.n},
                               {"temperature", 1.0},
                               {"seed", 7},
                               {"logprobs", shape.logprobs}}
                    .dump();
    std::vector<double> direct_s, http_s;
    for (int i = 0; i < requests + 3; ++i) {  // the first three of each warm up
      auto t0 = Clock::now();
      auto d = (*backend)->Sample(direct, crl::RequestContext::Background());
      auto t1 = Clock::now();
      auto h = http->Send(post, crl::RequestContext::Background(), nullptr);
      auto t2 = Clock::now();
      if (!d.ok() || !h.ok() || h->status != 200) {
        std::fprintf(stderr, "request failed: %s / %s\n", d.status().ToString().c_str(),
                     h.ok() ? h->body.substr(0, 300).c_str() : h.status().ToString().c_str());
        rc = 1;
        break;
      }
      if (i < 3) continue;
      direct_s.push_back(std::chrono::duration<double>(t1 - t0).count());
      http_s.push_back(std::chrono::duration<double>(t2 - t1).count());
    }
    if (rc) break;
    const double a = Median(direct_s), b = Median(http_s);
    nlohmann::json j = {{"max_tokens", shape.max_tokens}, {"n", shape.n}, {"logprobs", shape.logprobs},
                        {"requests", requests}, {"direct_median_ms", 1e3 * a}, {"openai_median_ms", 1e3 * b},
                        {"overhead_ms", 1e3 * (b - a)}};
    std::printf("%s\n", j.dump().c_str());
  }
  (*server)->Stop();
  if (!temp.empty()) fs::remove_all(temp);
  return rc;
}
