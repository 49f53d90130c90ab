// crl policy: the model library for people and scripts.
//
//   crl policy init --config FILE.json --out DIR [--seed S] [--tokenizer FILE.json]
//   crl policy tokenizer-train --corpus DIR --vocab N --out tokenizer.json
//   crl policy tokenize --model DIR --text TEXT [--json]
//   crl policy logprobs --model DIR --ids 1,2,3 [--adapter DIR] [--json]
//   crl policy generate --model DIR --prompt TEXT [--chat] [--max_new_tokens N] [--json]
//
// init, logprobs and generate need LibTorch (CRL_WITH_TORCH); tokenize and
// tokenizer-train do not.
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/file.h"
#include "common/status.h"
#include "common/utf8.h"
#include "lib/policy/bpe_trainer.h"
#include "lib/policy/config.h"
#include "lib/policy/tokenizer.h"
#include "services/cli/commands.h"

#ifdef CRL_WITH_TORCH
#include "lib/policy/generate.h"
#include "lib/policy/loader.h"
#include "lib/policy/logprobs.h"
#include "lib/policy/model.h"
#endif

namespace crl::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

int TokenizerTrain(int argc, char** argv) {
  std::string corpus, out;
  policy::BpeTrainOptions options;
  OptionSet flags("crl policy tokenizer-train",
                  "Trains a byte-level BPE tokenizer (Hugging Face tokenizer.json, ChatML\n"
                  "special tokens) on the text files under a directory; writes\n"
                  "tokenizer_config.json beside it.");
  flags.Add("corpus", &corpus, "directory of text files (source, markdown, templates)");
  flags.Add("vocab", &options.vocab_size, "vocabulary size, bytes and special tokens included");
  flags.Add("min_frequency", &options.min_frequency, "pairs seen fewer times are not merged");
  flags.Add("out", &out, "the tokenizer.json to write");
  absl::Status s = flags.Parse(argc, argv, nullptr);
  if (s.ok() && !flags.help_requested() && (corpus.empty() || out.empty())) {
    s = absl::InvalidArgumentError("--corpus and --out are required");
  }
  if (!s.ok() || flags.help_requested()) return UsageError(flags, s);
  auto docs = policy::ReadCorpus(corpus);
  if (!docs.ok()) return UsageError(flags, docs.status());
  auto text = policy::TrainBpe(*docs, options);
  if (!text.ok()) return UsageError(flags, text.status());
  const fs::path config = fs::path(out).parent_path() / "tokenizer_config.json";
  std::error_code ec;
  if (!fs::path(out).parent_path().empty()) fs::create_directories(fs::path(out).parent_path(), ec);
  for (const auto& [path, content] :
       {std::pair<std::string, std::string>{out, *text}, {config.string(), policy::ChatMlTokenizerConfig()}}) {
    if (absl::Status w = WriteFileAtomically(path, content); !w.ok()) return Fail(w);
  }
  auto trained = policy::Tokenizer::FromJson(*text, out);
  if (!trained.ok()) return Fail(trained.status());
  std::printf("wrote %s (%d tokens from %zu files) and %s\n", out.c_str(),
              (*trained)->vocab_size(), docs->size(), config.c_str());
  return 0;
}

int Tokenize(int argc, char** argv) {
  std::string model, text;
  bool as_json = false, no_special = false;
  OptionSet flags("crl policy tokenize", "Token ids of a text under a model's tokenizer.");
  flags.Add("model", &model, "model directory (its tokenizer.json) or a tokenizer.json");
  flags.Add("text", &text, "the text");
  flags.Add("plain", &no_special, "special tokens written in the text stay plain text");
  flags.Add("json", &as_json, "print {\"ids\": [...]}");
  absl::Status s = flags.Parse(argc, argv, nullptr);
  if (s.ok() && !flags.help_requested() && model.empty()) s = absl::InvalidArgumentError("--model is required");
  if (!s.ok() || flags.help_requested()) return UsageError(flags, s);
  auto tok = policy::LoadTokenizer(model);
  if (!tok.ok()) return UsageError(flags, tok.status());
  const std::vector<int> ids = (*tok)->Encode(text, !no_special);
  if (as_json) {
    std::printf("%s\n", json({{"ids", ids}}).dump().c_str());
  } else {
    for (size_t i = 0; i < ids.size(); ++i) {
      std::printf("%d\t%s\n", ids[i], json(ValidUtf8((*tok)->TokenText(ids[i]))).dump().c_str());
    }
  }
  return 0;
}

#ifdef CRL_WITH_TORCH

// --device / --dtype, shared by the commands that run the model.
struct Runtime {
  std::string device = "auto", dtype = "auto";
  void Bind(OptionSet* flags) {
    flags->Add("device", &device, "auto, cpu, cuda or cuda:N");
    flags->Add("dtype", &dtype, "auto (bfloat16 on CUDA, float32 on CPU), float32, bfloat16");
  }
};

int Init(int argc, char** argv) {
  std::string config_path, out, tokenizer;
  uint64_t seed = 0;
  OptionSet flags("crl policy init",
                  "A randomly initialised model of a Hugging Face config.json, written in\n"
                  "Hugging Face's layout (config.json, model.safetensors).");
  flags.Add("config", &config_path, "Hugging Face config.json (llama, qwen2, qwen3, mistral)");
  flags.Add("out", &out, "output directory");
  flags.Add("seed", &seed, "initialisation seed");
  flags.Add("tokenizer", &tokenizer,
            "tokenizer.json to copy beside the weights (with its tokenizer_config.json)");
  absl::Status s = flags.Parse(argc, argv, nullptr);
  if (s.ok() && !flags.help_requested() && (config_path.empty() || out.empty())) {
    s = absl::InvalidArgumentError("--config and --out are required");
  }
  if (!s.ok() || flags.help_requested()) return UsageError(flags, s);
  auto config = policy::LoadModelConfig(config_path);
  if (!config.ok()) return UsageError(flags, config.status());
  if (!tokenizer.empty()) {
    auto tok = policy::LoadTokenizer(tokenizer);
    if (!tok.ok()) return UsageError(flags, tok.status());
    if ((*tok)->vocab_size() > config->vocab_size) {
      return UsageError(flags, absl::InvalidArgumentError(absl::StrCat(
                                   "the tokenizer has ", (*tok)->vocab_size(), " ids but ",
                                   config_path, " says vocab_size ", config->vocab_size)));
    }
  }
  auto model = policy::CausalLm::Init(*config, seed, torch::kCPU, torch::kFloat32);
  if (!model.ok()) return Fail(model.status());
  if (absl::Status w = (*model)->Save(out); !w.ok()) return Fail(w);
  if (!tokenizer.empty()) {
    const fs::path from = fs::is_directory(tokenizer) ? fs::path(tokenizer) / "tokenizer.json"
                                                      : fs::path(tokenizer);
    for (const char* name : {"tokenizer.json", "tokenizer_config.json"}) {
      const fs::path src = from.parent_path() / name;
      auto text = ReadFileToString(src.string(), name);
      if (!text.ok()) {
        if (std::string(name) == "tokenizer.json") return Fail(text.status());
        text = policy::ChatMlTokenizerConfig();
      }
      if (absl::Status w = WriteFileAtomically((fs::path(out) / name).string(), *text); !w.ok()) {
        return Fail(w);
      }
    }
  }
  std::printf("wrote %s: %s, %.1fM parameters (%s), seed %llu\n", out.c_str(),
              policy::FamilyName(config->family), config->ParameterCount() / 1e6,
              config->torch_dtype.c_str(), static_cast<unsigned long long>(seed));
  return 0;
}

int Logprobs(int argc, char** argv) {
  std::string model_dir, adapter, ids_text;
  bool as_json = false;
  Runtime runtime;
  OptionSet flags("crl policy logprobs",
                  "Each token's log-probability given the tokens before it (the first token\n"
                  "excluded).");
  flags.Add("model", &model_dir, "model directory");
  flags.Add("adapter", &adapter, "a PEFT LoRA adapter directory to apply");
  flags.Add("ids", &ids_text, "comma-separated token ids (at least two)");
  flags.Add("json", &as_json, "print {\"logprobs\": [...]}");
  runtime.Bind(&flags);
  absl::Status s = flags.Parse(argc, argv, nullptr);
  std::vector<int64_t> ids;
  for (absl::string_view part : absl::StrSplit(ids_text, ',', absl::SkipWhitespace())) {
    int64_t id;
    if (!absl::SimpleAtoi(part, &id)) {
      s = absl::InvalidArgumentError(absl::StrCat("--ids: '", part, "' is not an integer"));
      break;
    }
    ids.push_back(id);
  }
  if (s.ok() && !flags.help_requested() && model_dir.empty()) s = absl::InvalidArgumentError("--model is required");
  if (s.ok() && !flags.help_requested() && ids.size() < 2) {
    s = absl::InvalidArgumentError("--ids: give at least two token ids");
  }
  if (!s.ok() || flags.help_requested()) return UsageError(flags, s);
  auto place = policy::ResolvePlacement(runtime.device, runtime.dtype);
  if (!place.ok()) return UsageError(flags, place.status());
  auto model = policy::LoadPolicy(model_dir, adapter, *place);
  if (!model.ok()) return Fail(model.status());
  const int vocab = (*model)->config().vocab_size;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= vocab) {
      return UsageError(flags, absl::InvalidArgumentError(absl::StrCat(
                                   "--ids: token ", i, " is ", ids[i], ", outside the vocabulary [0, ",
                                   vocab, ")")));
    }
  }
  torch::NoGradGuard no_grad;
  torch::Tensor t = torch::tensor(ids, torch::kLong).unsqueeze(0).to(place->device);
  torch::Tensor lp = policy::TokenLogprobs((*model)->Forward(t), t).to(torch::kCPU).squeeze(0);
  std::vector<double> values(lp.size(0));
  for (int64_t i = 0; i < lp.size(0); ++i) values[i] = lp[i].item<double>();
  if (as_json) {
    std::printf("%s\n", json({{"logprobs", values}}).dump().c_str());
  } else {
    for (size_t i = 0; i < values.size(); ++i) std::printf("%lld\t%.6f\n", static_cast<long long>(ids[i + 1]), values[i]);
  }
  return 0;
}

int Generate(int argc, char** argv) {
  std::string model_dir, adapter, prompt, system;
  bool chat = false, as_json = false;
  policy::SamplingParams params;
  params.max_new_tokens = 128;
  Runtime runtime;
  OptionSet flags("crl policy generate", "Samples a completion of a prompt.");
  flags.Add("model", &model_dir, "model directory (config.json, weights, tokenizer.json)");
  flags.Add("adapter", &adapter, "a PEFT LoRA adapter directory to apply");
  flags.Add("prompt", &prompt, "the prompt text (with --chat: the user message)");
  flags.Add("chat", &chat, "wrap the prompt in the model's chat format (tokenizer_config.json)");
  flags.Add("system", &system, "with --chat: a system message");
  flags.Add("max_new_tokens", &params.max_new_tokens, "tokens to generate at most");
  flags.Add("temperature", &params.temperature, "0: greedy");
  flags.Add("top_p", &params.top_p, "nucleus sampling mass");
  flags.Add("top_k", &params.top_k, "only the k most likely tokens (0: all)");
  flags.Add("seed", &params.seed, "sampling seed");
  flags.Add("json", &as_json, "print {\"text\", \"ids\", \"logprobs\", \"finish_reason\"}");
  runtime.Bind(&flags);
  absl::Status s = flags.Parse(argc, argv, nullptr);
  if (s.ok() && !flags.help_requested() && model_dir.empty()) s = absl::InvalidArgumentError("--model is required");
  if (!s.ok() || flags.help_requested()) return UsageError(flags, s);
  auto tok = policy::LoadTokenizer(model_dir);
  if (!tok.ok()) return UsageError(flags, tok.status());
  std::vector<int> ids;
  if (chat) {
    auto format = policy::LoadChatFormat(model_dir);
    if (!format.ok()) return UsageError(flags, format.status());
    std::vector<policy::ChatMessage> messages;
    if (!system.empty()) messages.push_back({"system", system});
    messages.push_back({"user", prompt});
    auto encoded = policy::EncodeChat(**tok, *format, messages, true);
    if (!encoded.ok()) return Fail(encoded.status());
    ids = *encoded;
    params.stop_ids = policy::EndOfTurnIds(**tok, *format);
  } else {
    ids = (*tok)->Encode(prompt);
  }
  auto place = policy::ResolvePlacement(runtime.device, runtime.dtype);
  if (!place.ok()) return UsageError(flags, place.status());
  auto model = policy::LoadPolicy(model_dir, adapter, *place);
  if (!model.ok()) return Fail(model.status());
  for (int eos : (*model)->config().eos_token_ids) params.stop_ids.push_back(eos);
  auto out = policy::Generate(**model, {ids}, params);
  if (!out.ok()) return out.status().code() == absl::StatusCode::kInvalidArgument
                            ? UsageError(flags, out.status())
                            : Fail(out.status());
  const policy::Generation& g = (*out)[0];
  // A random or partly trained model can stop inside a UTF-8 sequence.
  const std::string text = ValidUtf8((*tok)->Decode(g.tokens, /*skip_special=*/true));
  if (as_json) {
    std::printf("%s\n", json({{"text", text}, {"ids", g.tokens}, {"logprobs", g.logprobs},
                              {"finish_reason", g.finish_reason}})
                            .dump()
                            .c_str());
  } else {
    std::printf("%s\n", text.c_str());
  }
  return 0;
}

#else

int NeedsTorch(const char* verb) {
  std::fprintf(stderr,
               "crl policy %s: this crl was built without LibTorch (configure with "
               "libtorch-dev installed, or -DCRL_TORCH=ON)\n",
               verb);
  return 2;
}
int Init(int, char**) { return NeedsTorch("init"); }
int Logprobs(int, char**) { return NeedsTorch("logprobs"); }
int Generate(int, char**) { return NeedsTorch("generate"); }

#endif  // CRL_WITH_TORCH

constexpr const char* kUsage =
    "usage: crl policy VERB [options]\n"
    "\n"
    "  init              a random model of a Hugging Face config.json (HF layout out)\n"
    "  tokenizer-train   train a byte-level BPE tokenizer.json on a corpus directory\n"
    "  tokenize          token ids of a text\n"
    "  logprobs          log-probabilities of given token ids under a model\n"
    "  generate          sample a completion\n"
    "\n"
    "`crl policy VERB --help` describes a verb's options.\n";

}  // namespace

int PolicyCommand(int argc, char** argv) {
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  const std::string verb = argv[1];
  if (verb == "init") return Init(argc - 1, argv + 1);
  if (verb == "tokenizer-train") return TokenizerTrain(argc - 1, argv + 1);
  if (verb == "tokenize") return Tokenize(argc - 1, argv + 1);
  if (verb == "logprobs") return Logprobs(argc - 1, argv + 1);
  if (verb == "generate") return Generate(argc - 1, argv + 1);
  if (IsHelpArg(verb)) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  std::fprintf(stderr, "crl policy: unknown verb '%s'\n\n%s", verb.c_str(), kUsage);
  return 2;
}

}  // namespace crl::cli
