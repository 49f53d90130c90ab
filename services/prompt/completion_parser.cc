#include "services/prompt/completion_parser.h"

#include <algorithm>
#include <regex>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "common/utf8.h"

namespace crl::prompt {
namespace {

enum class Section { kNone, kAnalysis, kDesign, kCode, kOther };

struct Block {
  std::string info;     // the fence's info string, lower case
  std::string content;  // without the fences
  int line = 0;         // 1-based line of the opening fence
  Section section = Section::kNone;
  bool closed = false;
};

struct Fence {
  char ch = 0;
  size_t length = 0;
  std::string info;
};

// A fence line: at most three spaces, then three or more ` or ~.
bool ParseFence(absl::string_view line, Fence* fence) {
  size_t i = 0;
  while (i < line.size() && i < 3 && line[i] == ' ') ++i;
  if (i >= line.size() || (line[i] != '`' && line[i] != '~')) return false;
  const char ch = line[i];
  size_t n = 0;
  while (i + n < line.size() && line[i + n] == ch) ++n;
  if (n < 3) return false;
  std::string info(absl::StripAsciiWhitespace(line.substr(i + n)));
  if (ch == '`' && info.find('`') != std::string::npos) return false;
  *fence = {ch, n, absl::AsciiStrToLower(info)};
  return true;
}

bool Closes(absl::string_view line, const Fence& open) {
  Fence f;
  return ParseFence(line, &f) && f.ch == open.ch && f.length >= open.length && f.info.empty();
}

Section Classify(std::string heading) {
  heading = absl::AsciiStrToLower(heading);
  if (absl::StrContains(heading, "analysis")) return Section::kAnalysis;
  for (const char* word : {"design", "algorithm", "plan", "approach"}) {
    if (absl::StrContains(heading, word)) return Section::kDesign;
  }
  for (const char* word : {"code", "implementation", "solution"}) {
    if (absl::StrContains(heading, word)) return Section::kCode;
  }
  return Section::kOther;
}

// A heading line outside code: "## Title", "**Title**", "1. Title" or
// "Title:" (the last two only when short and naming a known section).
bool Heading(absl::string_view raw, Section* section) {
  const std::string line(absl::StripAsciiWhitespace(raw));
  if (line.empty()) return false;
  static const std::regex kHash(R"(^#{1,6}\s+(.*)$)");
  static const std::regex kBold(R"(^\*\*(.+?)\*\*:?$)");
  static const std::regex kNumbered(R"(^\d+[.)]\s+(.+)$)");
  std::smatch m;
  if (std::regex_match(line, m, kHash) || std::regex_match(line, m, kBold)) {
    *section = Classify(m[1].str());
    return true;
  }
  if (line.size() <= 60 && std::regex_match(line, m, kNumbered)) {
    Section s = Classify(m[1].str());
    if (s == Section::kOther) return false;
    *section = s;
    return true;
  }
  if (line.size() <= 40 && line.back() == ':') {
    Section s = Classify(line);
    if (s == Section::kOther) return false;
    *section = s;
    return true;
  }
  return false;
}

// The languages a task accepts, by fence info string.
bool Allowed(const std::string& lang, const ParseOptions& o) {
  static const std::vector<std::string> kPython = {"python", "py", "python3", "py3"};
  static const std::vector<std::string> kCpp = {"cpp", "c++", "cc", "cxx", "c", "hpp"};
  static const std::vector<std::string> kCuda = {"cuda", "cu"};
  auto in = [&](const std::vector<std::string>& v) {
    return std::find(v.begin(), v.end(), lang) != v.end();
  };
  if (o.format == TaskFormat::kKernelBench) return in(kPython);
  return in(kCpp) || (o.backend == BackendKind::kCuda && in(kCuda));
}

// "python", "cpp" or "" from the code itself.
std::string InferLanguage(const std::string& code) {
  static const std::regex kPython(R"((^|\n)\s*(import |from \S+ import |def |class \w+.*:\s*($|\n)))");
  static const std::regex kCpp(R"((^|\n)\s*#\s*include\b|__global__|extern\s+"C")");
  const bool py = std::regex_search(code, kPython);
  const bool cpp = std::regex_search(code, kCpp);
  if (cpp && !absl::StrContains(code, "load_inline") && !absl::StrContains(code, "import torch")) {
    return "cpp";
  }
  if (py) return "python";
  return cpp ? "cpp" : "";
}

std::string FirstWord(const std::string& info) {
  std::string w = info.substr(0, info.find_first_of(" \t{"));
  if (!w.empty() && w[0] == '.') w = w.substr(1);
  return w;
}

bool HasEntryPoint(const std::string& code, const ParseOptions& o) {
  static const std::regex kModelNew(R"((^|\n)[ \t]*class[ \t]+ModelNew\b)");
  static const std::regex kCrlRun(R"(\bcrl_run\s*\()");
  return std::regex_search(code, o.format == TaskFormat::kKernelBench ? kModelNew : kCrlRun);
}

std::string Trimmed(const std::string& s) { return std::string(absl::StripAsciiWhitespace(s)); }

v1::ParseCompletionResponse Reject(v1::ParseError error, const std::string& detail) {
  v1::ParseCompletionResponse r;
  r.set_error(error);
  r.set_error_detail(ValidUtf8(detail));
  return r;
}

}  // namespace

std::string ParseErrorShortName(v1::ParseError error) {
  if (error == v1::PARSE_ERROR_UNSPECIFIED) return "OK";
  std::string name = v1::ParseError_Name(error);
  return name.rfind("PARSE_ERROR_", 0) == 0 ? name.substr(12) : std::to_string(error);
}

absl::StatusOr<v1::ParseCompletionResponse> ParseRequest(
    const v1::ParseCompletionRequest& request) {
  ParseOptions o;
  switch (request.format()) {
    case v1::TASK_FORMAT_UNSPECIFIED:
    case v1::TASK_FORMAT_NATIVE: o.format = TaskFormat::kNative; break;
    case v1::TASK_FORMAT_KERNELBENCH: o.format = TaskFormat::kKernelBench; break;
    default: return absl::InvalidArgumentError("format: unknown value");
  }
  switch (request.backend()) {
    case v1::BACKEND_UNSPECIFIED:
    case v1::BACKEND_CUDA: o.backend = BackendKind::kCuda; break;
    case v1::BACKEND_HOST: o.backend = BackendKind::kHost; break;
    default: return absl::InvalidArgumentError("backend: unknown value");
  }
  o.finish_reason = request.finish_reason();
  o.require_analysis = request.require_analysis();
  return ParseCompletion(request.completion(), o);
}

v1::ParseCompletionResponse ParseCompletion(const std::string& completion,
                                            const ParseOptions& o) {
  if (completion.size() > o.max_completion_bytes) {
    return Reject(v1::PARSE_ERROR_TOO_LARGE,
                  absl::StrCat("completion of ", completion.size(), " bytes; at most ",
                               o.max_completion_bytes));
  }
  if (o.finish_reason == "length") {
    return Reject(v1::PARSE_ERROR_TRUNCATED,
                  "the sampler stopped at its token limit (finish reason: length)");
  }
  // One pass over the lines: sections and fenced blocks.
  std::string text = completion;
  absl::StrReplaceAll({{"\r\n", "\n"}, {"\r", "\n"}}, &text);
  std::vector<Block> blocks;
  std::string sections[5];
  Section section = Section::kNone;
  bool saw_heading = false;
  std::string before_first_block;
  Fence open;
  Block* current = nullptr;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    if (current) {
      if (Closes(line, open)) {
        current->closed = true;
        current = nullptr;
      } else {
        absl::StrAppend(&current->content, line, "\n");
      }
      if (section != Section::kNone) absl::StrAppend(&sections[static_cast<int>(section)], line, "\n");
      continue;
    }
    Fence f;
    if (ParseFence(line, &f)) {
      open = f;
      blocks.push_back({f.info, "", line_no, section, false});
      current = &blocks.back();
      if (section != Section::kNone) absl::StrAppend(&sections[static_cast<int>(section)], line, "\n");
      continue;
    }
    Section heading;
    if (Heading(line, &heading)) {
      section = heading;
      saw_heading = true;
      continue;
    }
    if (section != Section::kNone) absl::StrAppend(&sections[static_cast<int>(section)], line, "\n");
    if (blocks.empty()) absl::StrAppend(&before_first_block, line, "\n");
  }
  if (current) {
    return Reject(v1::PARSE_ERROR_TRUNCATED,
                  absl::StrCat("the code block opened at line ", current->line,
                               " is never closed (the completion looks cut off)"));
  }
  if (blocks.empty()) {
    return Reject(v1::PARSE_ERROR_NO_CODE_BLOCK,
                  "no fenced code block (```) in the completion");
  }

  // Which block is the answer.
  const bool kb = o.format == TaskFormat::kKernelBench;
  // The block's language is the task's: as tagged, or as it reads.
  auto language_ok = [&](const Block& b) {
    const std::string tag = FirstWord(b.info);
    if (!tag.empty()) return Allowed(tag, o);
    const std::string inferred = InferLanguage(b.content);
    return inferred.empty() || (inferred == "python") == kb;
  };
  auto fits = [&](const Block& b) { return language_ok(b) && HasEntryPoint(b.content, o); };
  std::vector<const Block*> in_code;
  for (const Block& b : blocks) {
    if (b.section == Section::kCode) in_code.push_back(&b);
  }
  const Block* chosen = nullptr;
  if (blocks.size() == 1) {
    chosen = &blocks[0];
  } else if (in_code.size() == 1) {
    chosen = in_code[0];
  } else {
    std::vector<const Block*> fitting;
    for (const Block& b : blocks) {
      if (fits(b)) fitting.push_back(&b);
    }
    if (fitting.size() != 1) {
      return Reject(v1::PARSE_ERROR_MULTIPLE_CODE_BLOCKS,
                    absl::StrCat(blocks.size(), " code blocks and ",
                                 fitting.size() == 0 ? "none" : "more than one",
                                 " of them is a complete answer; put the one answer under the "
                                 "Code heading"));
    }
    chosen = fitting[0];
  }

  const std::string tag = FirstWord(chosen->info);
  const std::string inferred = InferLanguage(chosen->content);
  if (!language_ok(*chosen)) {
    return Reject(v1::PARSE_ERROR_WRONG_LANGUAGE,
                  absl::StrCat("the code block (line ", chosen->line, ") is ",
                               tag.empty() ? inferred : "'" + tag + "'", "; this ",
                               TaskFormatName(o.format), " task takes ",
                               kb ? "Python" : o.backend == BackendKind::kCuda ? "CUDA C++" : "C++"));
  }
  if (chosen->content.size() > o.max_code_bytes) {
    return Reject(v1::PARSE_ERROR_TOO_LARGE, absl::StrCat("code of ", chosen->content.size(),
                                                          " bytes; at most ", o.max_code_bytes));
  }
  if (!HasEntryPoint(chosen->content, o)) {
    return Reject(v1::PARSE_ERROR_MISSING_ENTRY_POINT,
                  absl::StrCat("the code (line ", chosen->line, ") defines no ",
                               kb ? "`class ModelNew`" : "`crl_run` function"));
  }
  std::string analysis = Trimmed(sections[static_cast<int>(Section::kAnalysis)]);
  if (!saw_heading) analysis = Trimmed(before_first_block);
  if (o.require_analysis && analysis.empty()) {
    return Reject(v1::PARSE_ERROR_MISSING_ANALYSIS, "no performance-analysis section");
  }

  v1::ParseCompletionResponse r;
  r.set_analysis(ValidUtf8(analysis));
  r.set_design(ValidUtf8(Trimmed(sections[static_cast<int>(Section::kDesign)])));
  r.set_language(ValidUtf8(tag.empty() ? inferred : tag));
  v1::Candidate* c = r.mutable_candidate();
  c->set_source(ValidUtf8(chosen->content));
  const bool cuda = o.backend == BackendKind::kCuda;
  c->set_filename(kb ? "candidate.py"
                  : cuda                               ? "candidate.cu"
                                                       : "candidate.cc");
  c->set_backend(kb ? v1::BACKEND_UNSPECIFIED
                 : cuda                               ? v1::BACKEND_CUDA
                                                      : v1::BACKEND_HOST);
  return r;
}

}  // namespace crl::prompt
