// crl sample: completions from a crl-sampler (--sampler ADDR), an
// OpenAI-compatible endpoint (--endpoint URL --model NAME) or a policy
// directory loaded in this process (--policy DIR).
//
//   crl sample --sampler HOST:PORT --prompt TEXT -n 4 [--json]
//   crl sample --endpoint http://vllm:8000/v1 --model Qwen/Qwen2.5-0.5B --messages chat.json

#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/file.h"
#include "common/status.h"
#include "services/cli/commands.h"
#include "services/sampler/grpc_sampler_client.h"

namespace crl::cli {
namespace {

using nlohmann::json;

// [{"role": "user", "content": "..."}, ...]; errors name the entry.
absl::Status ReadMessages(const std::string& path, v1::SampleRequest* r) {
  CRL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path, "messages file"));
  json j = json::parse(text, nullptr, false);
  if (!j.is_array()) return absl::InvalidArgumentError(absl::StrCat(path, ": not a JSON list of messages"));
  for (size_t i = 0; i < j.size(); ++i) {
    if (!j[i].is_object() || !j[i].contains("role") || !j[i].contains("content") ||
        !j[i]["role"].is_string() || !j[i]["content"].is_string()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": message ", i, " needs a string role and content"));
    }
    auto* m = r->add_messages();
    m->set_role(j[i]["role"].get<std::string>());
    m->set_content(j[i]["content"].get<std::string>());
  }
  return absl::OkStatus();
}

}  // namespace

int SampleCommand(int argc, char** argv) {
  // -n N is the familiar spelling; OptionSet takes --n.
  std::vector<std::string> args(argv, argv + argc);
  for (auto& a : args) {
    if (a == "-n") a = "--n";
  }
  std::vector<char*> av;
  for (auto& a : args) av.push_back(a.data());

  std::string address, endpoint, model, policy, prompt, messages;
  bool as_json = false, raw = false;
  int n = 1;
  v1::SampleRequest request;
  v1::SamplingParams* p = request.mutable_params();
  double temperature = 1.0, top_p = 1.0;
  int top_k = 0, max_tokens = 256;
  int64_t seed = -1;
  std::vector<std::string> stop;
  ClientOptions client;
  OptionSet flags("crl sample", "Completions from a crl-sampler, an OpenAI-compatible endpoint or a policy.");
  flags.Add("sampler", &address, "HOST:PORT of a crl-sampler");
  flags.Add("endpoint", &endpoint, "or an OpenAI-compatible base URL (http://host:8000/v1)");
  flags.Add("model", &model, "the endpoint's model (with --endpoint)");
  flags.Add("policy", &policy, "or a policy directory, loaded in this process");
  flags.Add("prompt", &prompt, "the prompt (a user message, or raw text with --raw)");
  flags.Add("raw", &raw, "send --prompt as raw text, not a chat message");
  flags.Add("messages", &messages, "a JSON file of chat messages instead of --prompt");
  flags.Add("n", &n, "completions");
  flags.Add("temperature", &temperature, "0: greedy");
  flags.Add("top_p", &top_p, "nucleus mass");
  flags.Add("top_k", &top_k, "only the k most likely tokens (0: all)");
  flags.Add("max_tokens", &max_tokens, "new tokens at most");
  flags.Add("seed", &seed, "sampling seed (negative: random)");
  flags.Add("stop", &stop, "stop strings");
  flags.Add("json", &as_json, "print the SampleResponse as JSON");
  BindClientOptions(&flags, &client);
  absl::Status s = flags.Parse(static_cast<int>(av.size()), av.data(), nullptr);
  const int backends = !address.empty() + !endpoint.empty() + !policy.empty();
  if (s.ok() && !flags.help_requested() && backends != 1) {
    s = absl::InvalidArgumentError("give one of --sampler, --endpoint or --policy");
  }
  if (s.ok() && !flags.help_requested() && prompt.empty() == messages.empty()) {
    s = absl::InvalidArgumentError("give --prompt or --messages");
  }
  if (s.ok() && !endpoint.empty() && model.empty()) s = absl::InvalidArgumentError("--endpoint needs --model");
  if (s.ok() && !messages.empty()) s = ReadMessages(messages, &request);
  if (!s.ok() || flags.help_requested()) return UsageError(flags, s);
  if (!prompt.empty()) {
    if (raw) {
      request.set_prompt(prompt);
    } else {
      auto* m = request.add_messages();
      m->set_role("user");
      m->set_content(prompt);
    }
  }
  request.set_num_completions(n);
  p->set_temperature(temperature);
  p->set_top_p(top_p);
  p->set_top_k(top_k);
  p->set_max_tokens(max_tokens);
  if (seed >= 0) {
    p->set_seed(static_cast<uint64_t>(seed));
    p->set_has_seed(true);
  }
  for (const auto& x : stop) p->add_stop(x);

  std::unique_ptr<SamplerClientInterface> sampler;
  if (!address.empty()) {
    auto c = GrpcSamplerClient::Create(address, client);
    if (!c.ok()) return Fail(c.status());
    sampler = std::move(*c);
  } else {
    LocalSamplerOptions o;
    o.policy = policy;
    if (!endpoint.empty()) o.endpoints = {endpoint};
    o.model = model;
#ifdef CRL_WITH_TORCH
    auto c = StartLocalPolicySampler(o);  // in crl-policy
#else
    auto c = StartLocalSampler(o);  // in crl: main() hands --policy to crl-policy
#endif
    if (!c.ok()) return Fail(c.status());
    sampler = std::move(*c);
  }
  RequestContext ctx(RealClock::Get(), absl::Now() + client.timeout * 10);
  auto r = sampler->Sample(request, ctx);
  if (!r.ok()) {
    return r.status().code() == absl::StatusCode::kInvalidArgument ? UsageError(flags, r.status())
                                                                     : Fail(r.status());
  }
  if (as_json) {
    std::printf("%s\n", ProtoJson(*r, false).c_str());
    return 0;
  }
  for (int i = 0; i < r->completions_size(); ++i) {
    const auto& c = r->completions(i);
    std::printf("--- completion %d (%s, %d tokens, policy %s)\n%s\n", i, c.finish_reason().c_str(),
                c.token_ids_size(), c.policy_version().c_str(), c.text().c_str());
  }
  return 0;
}

}  // namespace crl::cli
