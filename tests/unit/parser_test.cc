// The completion parser: the three sections, every typed reject, and fuzzed
// input (no crash, a typed result, valid UTF-8 out).
#include <catch2/catch.hpp>

#include <map>
#include <random>

#include "common/utf8.h"
#include "services/prompt/completion_parser.h"

namespace crl::prompt {
namespace {

ParseOptions Kb() {
  ParseOptions o;
  o.format = TaskFormat::kKernelBench;
  return o;
}

ParseOptions Native(BackendKind backend = BackendKind::kCuda) {
  ParseOptions o;
  o.backend = backend;
  return o;
}

const char* kGood =
    "### Performance analysis\nThe reference launches three kernels.\n\n"
    "### Algorithm design\nFuse them into one.\n\n"
    "### Code\n```python\nimport torch\nclass ModelNew(torch.nn.Module):\n    pass\n```\n";

TEST_CASE("a well-formed completion splits into its three parts", "[parser]") {
  auto r = ParseCompletion(kGood, Kb());
  REQUIRE(r.error() == v1::PARSE_ERROR_UNSPECIFIED);
  CHECK(r.analysis() == "The reference launches three kernels.");
  CHECK(r.design() == "Fuse them into one.");
  CHECK(r.candidate().source() == "import torch\nclass ModelNew(torch.nn.Module):\n    pass\n");
  CHECK(r.candidate().filename() == "candidate.py");
  CHECK(r.language() == "python");

  // CRLF line ends parse the same.
  std::string crlf = kGood;
  for (size_t at = crlf.find('\n'); at != std::string::npos; at = crlf.find('\n', at + 2)) {
    crlf.replace(at, 1, "\r\n");
  }
  auto r2 = ParseCompletion(crlf, Kb());
  REQUIRE(r2.error() == v1::PARSE_ERROR_UNSPECIFIED);
  CHECK(r2.candidate().source() == r.candidate().source());

  auto native = ParseCompletion(
      "**Performance analysis**\nmemory bound\n\n**Code**\n```cuda\n#include <crl/kernel.h>\n"
      "extern \"C\" CRL_EXPORT int crl_run(const crl_args* a) { return 0; }\n```\n",
      Native());
  REQUIRE(native.error() == v1::PARSE_ERROR_UNSPECIFIED);
  CHECK(native.analysis() == "memory bound");
  CHECK(native.candidate().filename() == "candidate.cu");
  CHECK(native.candidate().backend() == v1::BACKEND_CUDA);
}

TEST_CASE("each reject has its own reason", "[parser]") {
  CHECK(ParseCompletion("", Kb()).error() == v1::PARSE_ERROR_NO_CODE_BLOCK);
  CHECK(ParseCompletion("class ModelNew: pass", Kb()).error() == v1::PARSE_ERROR_NO_CODE_BLOCK);

  ParseOptions cut = Kb();
  cut.finish_reason = "length";
  CHECK(ParseCompletion(kGood, cut).error() == v1::PARSE_ERROR_TRUNCATED);
  auto unclosed = ParseCompletion("### Code\n```python\nclass ModelNew:\n  pass\n", Kb());
  CHECK(unclosed.error() == v1::PARSE_ERROR_TRUNCATED);
  CHECK_THAT(unclosed.error_detail(), Catch::Contains("line 2 is never closed"));

  auto two = ParseCompletion("```python\nclass ModelNew: pass\n```\n```python\nclass ModelNew: x\n```\n", Kb());
  CHECK(two.error() == v1::PARSE_ERROR_MULTIPLE_CODE_BLOCKS);
  // ... unless the Code heading or the entry point settles it.
  auto headed = ParseCompletion(
      "## Analysis\n```python\nx = slow(y)\n```\n## Code\n```python\nclass ModelNew: pass\n```\n", Kb());
  CHECK(headed.error() == v1::PARSE_ERROR_UNSPECIFIED);
  auto by_entry = ParseCompletion("```python\nx = 1\n```\ntext\n```python\nclass ModelNew: pass\n```\n", Kb());
  REQUIRE(by_entry.error() == v1::PARSE_ERROR_UNSPECIFIED);
  CHECK(by_entry.candidate().source() == "class ModelNew: pass\n");

  CHECK(ParseCompletion("```cpp\nint crl_run(const crl_args*) { return 0; }\n```\n", Kb()).error() ==
        v1::PARSE_ERROR_WRONG_LANGUAGE);
  CHECK(ParseCompletion("```python\nclass ModelNew: pass\n```\n", Native()).error() ==
        v1::PARSE_ERROR_WRONG_LANGUAGE);
  CHECK(ParseCompletion("```cuda\nint crl_run(const crl_args*) { return 0; }\n```\n",
                        Native(BackendKind::kHost))
            .error() == v1::PARSE_ERROR_WRONG_LANGUAGE);  // host tasks take C++
  // No tag: the language is read from the code.
  CHECK(ParseCompletion("```\nimport torch\nclass ModelNew(torch.nn.Module): pass\n```\n", Native())
            .error() == v1::PARSE_ERROR_WRONG_LANGUAGE);
  CHECK(ParseCompletion("```\nimport torch\nclass ModelNew(torch.nn.Module): pass\n```\n", Kb())
            .error() == v1::PARSE_ERROR_UNSPECIFIED);

  CHECK(ParseCompletion("```python\nclass Model: pass\n```\n", Kb()).error() ==
        v1::PARSE_ERROR_MISSING_ENTRY_POINT);
  CHECK(ParseCompletion("```cpp\nint run(void) { return 0; }\n```\n", Native()).error() ==
        v1::PARSE_ERROR_MISSING_ENTRY_POINT);

  ParseOptions small = Kb();
  small.max_completion_bytes = 100;
  CHECK(ParseCompletion(kGood, small).error() == v1::PARSE_ERROR_TOO_LARGE);
  small = Kb();
  small.max_code_bytes = 10;
  CHECK(ParseCompletion(kGood, small).error() == v1::PARSE_ERROR_TOO_LARGE);

  ParseOptions strict = Kb();
  strict.require_analysis = true;
  CHECK(ParseCompletion("## Code\n```python\nclass ModelNew: pass\n```\n", strict).error() ==
        v1::PARSE_ERROR_MISSING_ANALYSIS);
  CHECK(ParseCompletion(kGood, strict).error() == v1::PARSE_ERROR_UNSPECIFIED);
}

TEST_CASE("nested fences, unicode and binary bytes get typed results", "[parser]") {
  // A longer fence holds a shorter one as content (CommonMark).
  auto nested = ParseCompletion(
      "````markdown\n```python\nclass ModelNew: pass\n```\n````\n", Kb());
  CHECK(nested.error() == v1::PARSE_ERROR_WRONG_LANGUAGE);
  auto tilde = ParseCompletion("~~~python\n```\nclass ModelNew: pass\n~~~\n", Kb());
  REQUIRE(tilde.error() == v1::PARSE_ERROR_UNSPECIFIED);
  CHECK(tilde.candidate().source() == "```\nclass ModelNew: pass\n");

  auto unicode = ParseCompletion(
      "### Performance analysis\nμ-benchmarks show 内存 bound 🚀\n### Code\n```python\n"
      "# ünïcödé\nclass ModelNew: pass\n```\n", Kb());
  REQUIRE(unicode.error() == v1::PARSE_ERROR_UNSPECIFIED);
  CHECK(unicode.analysis() == "μ-benchmarks show 内存 bound 🚀");

  std::string binary = "```python\nclass ModelNew: pass\n\xff\xfe";
  binary.push_back('\0');
  binary += "\x80 bytes\n```\n";
  auto b = ParseCompletion(binary, Kb());
  REQUIRE(b.error() == v1::PARSE_ERROR_UNSPECIFIED);
  CHECK(ValidUtf8(b.candidate().source()) == b.candidate().source());
  CHECK(b.candidate().source().find("\xEF\xBF\xBD") != std::string::npos);
}

TEST_CASE("fuzz: random completions never crash and always get a typed result", "[parser]") {
  std::mt19937_64 rng(20261123);
  std::map<int, int> results;
  const std::vector<std::string> pieces = {
      "```", "\n```python\n", "\n```cpp\n", "\n```cuda\n", "\n```\n", "\n~~~\n", "````",
      "\n", "\r\n", "### Code\n", "\nclass ModelNew(nn.Module):\n", "\nint crl_run(a) {}\n",
      "## Performance analysis\n", "**Algorithm design**\n", "class ModelNew:", "crl_run(",
      "import torch\n", "#include <x>\n", " ", "\t", "é", "\xff", "\x00", "}", "{", "`", "~~",
      "1. Code\n", "Design:\n"};
  for (int i = 0; i < 3000; ++i) {
    std::string text;
    const int n = rng() % 60;
    for (int k = 0; k < n; ++k) {
      if (rng() % 5 == 0) {
        text.push_back(static_cast<char>(rng() % 256));
      } else {
        text += pieces[rng() % pieces.size()];
      }
    }
    for (const ParseOptions& o : {Kb(), Native(), Native(BackendKind::kHost)}) {
      v1::ParseCompletionResponse r = ParseCompletion(text, o);
      ++results[r.error()];
      INFO("input " << i);
      CHECK(v1::ParseError_IsValid(r.error()));
      if (r.error() == v1::PARSE_ERROR_UNSPECIFIED) {
        CHECK_FALSE(r.candidate().source().empty());
        CHECK(ValidUtf8(r.candidate().source()) == r.candidate().source());
      } else {
        CHECK_FALSE(r.error_detail().empty());
        CHECK(r.candidate().source().empty());
      }
      CHECK(ValidUtf8(r.analysis()) == r.analysis());
      CHECK(ValidUtf8(r.error_detail()) == r.error_detail());
    }
  }
  // The generator reaches most outcomes, parsed ones included.
  std::string summary;
  for (const auto& [error, n] : results) {
    summary += ParseErrorShortName(static_cast<v1::ParseError>(error)) + "=" + std::to_string(n) + " ";
  }
  INFO(summary);
  CHECK(results.size() >= 5);
  CHECK(results[v1::PARSE_ERROR_UNSPECIFIED] > 0);
  // A huge completion is refused before it is scanned.
  std::string huge(2 << 20, 'x');
  CHECK(ParseCompletion(huge, Kb()).error() == v1::PARSE_ERROR_TOO_LARGE);
}

TEST_CASE("ValidUtf8 keeps valid text and replaces every invalid sequence", "[parser]") {
  CHECK(ValidUtf8("plain ascii") == "plain ascii");
  CHECK(ValidUtf8("μ内🚀") == "μ内🚀");
  CHECK(ValidUtf8("\xC0\xAF") == "\xEF\xBF\xBD\xEF\xBF\xBD");      // overlong '/'
  CHECK(ValidUtf8("\xED\xA0\x80") == "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // a surrogate
  CHECK(ValidUtf8("a\xE4\xB8") == "a\xEF\xBF\xBD\xEF\xBF\xBD");   // cut short
  CHECK(ValidUtf8("\xF4\x90\x80\x80").find("\xF4\x90") == std::string::npos);  // past U+10FFFF
}

}  // namespace
}  // namespace crl::prompt
