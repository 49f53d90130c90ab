#include "lib/kernelbench/cuda_l1.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/status.h"
#include "lib/reward/names.h"
#include "lib/stats/stats.h"

namespace crl::kb {

using nlohmann::json;
using stats::IsPositiveFinite;

std::string StripFlagPrefix(const std::string& flag) {
  return absl::StartsWith(flag, "FLAG_") ? flag.substr(5) : flag;
}


namespace {

// A score: number, or null / missing / "None" / "" (nullopt), or a string
// holding a number (Python dumps sometimes stringify).
absl::StatusOr<std::optional<double>> ScoreField(const json& row, const std::string& name,
                                                 const std::string& where) {
  auto it = row.find(name);
  if (it == row.end() || it->is_null()) return std::optional<double>();
  if (it->is_number()) return std::optional<double>(it->get<double>());
  if (it->is_string()) {
    std::string s(absl::StripAsciiWhitespace(it->get<std::string>()));
    if (s.empty() || s == "None") return std::optional<double>();
    double v;
    if (absl::SimpleAtod(s, &v)) return std::optional<double>(v);
    return absl::InvalidArgumentError(absl::StrCat(where, name, ": expected a number, got \"", s, "\""));
  }
  return absl::InvalidArgumentError(
      absl::StrCat(where, name, ": expected a number or null, got ", it->type_name()));
}

absl::StatusOr<int> IdField(const json& row, const char* name, const std::string& where) {
  auto it = row.find(name);
  if (it == row.end()) return absl::InvalidArgumentError(absl::StrCat(where, name, ": missing"));
  if (!it->is_number_integer()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, name, ": expected an integer, got ", it->type_name()));
  }
  long long v = it->get<long long>();
  if (v < 0 || v > std::numeric_limits<int>::max()) {
    return absl::InvalidArgumentError(absl::StrCat(where, name, ": out of range: ", v));
  }
  return static_cast<int>(v);
}

bool IsBlank(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isspace(c); });
}

}  // namespace

absl::StatusOr<CudaL1Row> ParseCudaL1Line(const std::string& line, int line_number) {
  std::string where = absl::StrCat("line ", line_number, ": ");
  json row;
  try {
    row = json::parse(line);
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(where, "not JSON: ", e.what()));
  }
  if (!row.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(where, "expected a JSON object, got ", row.type_name()));
  }
  CudaL1Row r;
  r.line = line_number;
  CRL_ASSIGN_OR_RETURN(r.level_id, IdField(row, "level_id", where));
  CRL_ASSIGN_OR_RETURN(r.task_id, IdField(row, "task_id", where));
  if (auto it = row.find("ref_code"); it != row.end() && !it->is_null()) {
    if (!it->is_string()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "ref_code: expected a string, got ", it->type_name()));
    }
    r.ref_code = it->get<std::string>();
  }
  if (auto it = row.find("custom_code"); it != row.end() && !it->is_null()) {
    if (!it->is_string()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "custom_code: expected a string or null, got ", it->type_name()));
    }
    std::string code = it->get<std::string>();
    // The release writes Python's None as the string "None" for rows with no kernel.
    absl::string_view trimmed = absl::StripAsciiWhitespace(code);
    if (!trimmed.empty() && trimmed != "None") r.custom_code = std::move(code);
  }
  CRL_ASSIGN_OR_RETURN(r.score_default, ScoreField(row, "score_default", where));
  for (const auto& [key, value] : row.items()) {
    if (!absl::StartsWith(key, "score_") || key == "score_default") continue;
    CRL_ASSIGN_OR_RETURN(std::optional<double> score, ScoreField(row, key, where));
    if (score) r.other_scores[key] = *score;
  }
  return r;
}

absl::Status ForEachCudaL1Row(const std::string& path,
                              const std::function<absl::Status(CudaL1Row)>& fn) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read CUDA-L1 file ", path));
  std::string line;
  int line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (IsBlank(line)) continue;
    auto row = ParseCudaL1Line(line, line_number);
    if (!row.ok()) return Annotate(row.status(), absl::StrCat("CUDA-L1 file ", path));
    CRL_RETURN_IF_ERROR(fn(std::move(*row)));
  }
  if (in.bad()) return absl::InternalError(absl::StrCat("reading CUDA-L1 file ", path, " failed"));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<CudaL1Row>> ReadCudaL1(const std::string& path) {
  std::vector<CudaL1Row> rows;
  CRL_RETURN_IF_ERROR(ForEachCudaL1Row(path, [&rows](CudaL1Row r) {
    rows.push_back(std::move(r));
    return absl::OkStatus();
  }));
  return rows;
}

json CudaL1ResultJson(const CudaL1Result& r) {
  json j;
  j["level_id"] = r.level_id;
  j["task_id"] = r.task_id;
  j["status"] = r.status;
  j["correct"] = r.correct;
  j["speedup"] = r.speedup ? json(*r.speedup) : json(nullptr);
  j["speedup_ci"] = r.speedup_ci ? json::array({r.speedup_ci->first, r.speedup_ci->second}) : json(nullptr);
  j["flags"] = r.flags;
  j["custom_kernel"] = r.custom_kernel;
  j["reported_score"] = r.reported_score ? json(*r.reported_score) : json(nullptr);
  j["message"] = r.message;
  j["max_abs_error"] = r.max_abs_error ? json(*r.max_abs_error) : json(nullptr);
  j["max_rel_error"] = r.max_rel_error ? json(*r.max_rel_error) : json(nullptr);
  j["within_cuda_l1_tolerance"] =
      r.max_abs_error && r.max_rel_error
          ? json(CertainlyWithin(*r.max_abs_error, kCudaL1Tolerance))
          : json(nullptr);
  j["verify_seconds"] = r.verify_seconds;
  j["time_seconds"] = r.time_seconds;
  j["timing_pairs"] = r.timing_pairs;
  j["calls_per_sample"] = r.calls_per_sample;
  j["measure_seconds"] = r.measure_seconds;
  j["timing_mode"] = r.timing_mode.empty() ? json(nullptr) : json(r.timing_mode);
  j["graph_fallback"] = r.graph_fallback.empty() ? json(nullptr) : json(r.graph_fallback);
  j["cuda_l1_verdict"] = CudaL1Verdict(r);
  return j;
}

namespace {

// Wrong at our tolerance, certainly right at CUDA-L1's.
bool WrongWithinCudaL1Tolerance(const CudaL1Result& r) {
  return r.status == "WRONG_ANSWER" && r.max_abs_error && r.max_rel_error &&
         CertainlyWithin(*r.max_abs_error, kCudaL1Tolerance);
}

}  // namespace

std::string CudaL1Verdict(const CudaL1Result& r) {
  return r.status == "OK" || WrongWithinCudaL1Tolerance(r) ? "OK" : r.status;
}

bool CertainlyWithin(double max_abs_error, double tol) { return max_abs_error <= tol; }

json CudaL1Summary(const std::vector<CudaL1Result>& results) {
  std::map<std::string, int> by_status, by_flag;
  std::vector<double> measured, reported;
  int correct = 0, tolerance_decided = 0, timed = 0, correct_at_cuda_l1 = 0;
  for (const auto& r : results) {
    ++by_status[r.status];
    if (r.speedup) ++timed;
    if (CudaL1Verdict(r) == "OK") ++correct_at_cuda_l1;
    if (WrongWithinCudaL1Tolerance(r)) ++tolerance_decided;
    std::set<std::string> flags;
    for (const auto& f : r.flags) flags.insert(StripFlagPrefix(f));
    for (const auto& f : flags) ++by_flag[f];
    if (!r.correct) continue;
    ++correct;
    if (std::any_of(r.flags.begin(), r.flags.end(), IsTrustFlagName)) continue;
    if (!r.speedup || !IsPositiveFinite(*r.speedup)) continue;
    measured.push_back(*r.speedup);
    if (r.reported_score && IsPositiveFinite(*r.reported_score)) reported.push_back(*r.reported_score);
  }
  auto stats = [](const std::vector<double>& v) {
    return json{{"count", v.size()}, {"mean", stats::Mean(v)}, {"median", stats::Median(v)}, {"geomean", stats::GeometricMean(v)}};
  };
  json j;
  j["rows"] = results.size();
  j["correct"] = correct;
  j["trusted"] = measured.size();
  j["timed"] = timed;
  j["correct_at_cuda_l1"] = correct_at_cuda_l1;
  j["by_status"] = by_status.empty() ? json::object() : json(by_status);
  j["by_flag"] = by_flag.empty() ? json::object() : json(by_flag);
  // Wrong at our tolerance, right at CUDA-L1's.
  j["wrong_within_cuda_l1_tolerance"] = tolerance_decided;
  j["measured_speedup"] = stats(measured);
  j["reported_score"] = stats(reported);
  return j;
}


namespace {

// Python source as tokens, with comments and string literals dropped: a
// docstring saying "no load_inline() here" must not count, and CUDA code
// inside strings has no Python calls worth seeing. "\n" marks the end of a
// logical line (newlines inside brackets do not count).
std::vector<std::string> PythonCodeTokens(const std::string& src) {
  std::vector<std::string> tokens;
  size_t i = 0, n = src.size();
  int depth = 0;
  while (i < n) {
    char c = src[i];
    if (c == '#') {
      while (i < n && src[i] != '\n') ++i;
    } else if (c == '\\' && i + 1 < n && src[i + 1] == '\n') {
      i += 2;  // explicit line continuation
    } else if (c == '\n') {
      if (depth == 0 && (tokens.empty() || tokens.back() != "\n")) tokens.push_back("\n");
      ++i;
    } else if (c == '"' || c == '\'') {
      bool triple = i + 2 < n && src[i + 1] == c && src[i + 2] == c;
      i += triple ? 3 : 1;
      while (i < n) {
        if (src[i] == '\\') {
          i += 2;  // escapes (raw strings too cannot end in an odd backslash)
        } else if (triple && src[i] == c && i + 2 < n && src[i + 1] == c && src[i + 2] == c) {
          i += 3;
          break;
        } else if (!triple && (src[i] == c || src[i] == '\n')) {
          ++i;
          break;
        } else {
          ++i;
        }
      }
      tokens.push_back("\"\"");
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t start = i;
      while (i < n && (std::isalnum(static_cast<unsigned char>(src[i])) || src[i] == '_')) ++i;
      tokens.push_back(src.substr(start, i - start));
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else {
      if (c == '(' || c == '[' || c == '{') ++depth;
      if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
      tokens.push_back(std::string(1, c));
      ++i;
    }
  }
  return tokens;
}

}  // namespace

bool ContainsCustomKernel(const std::string& python_source) {
  std::vector<std::string> t = PythonCodeTokens(python_source);
  size_t n = t.size();
  auto at = [&](size_t i, const char* s) { return i < n && t[i] == s; };
  // Names bound by "from torch.utils.cpp_extension import load [as x]" and
  // "from triton import jit [as x]": a bare call or decorator of them counts.
  // "import torch.utils.cpp_extension as ext": ext.load(...) counts.
  std::set<std::string> extension_loaders, triton_jits, extension_modules = {"cpp_extension"};
  for (size_t i = 0; i + 1 < n; ++i) {
    if (t[i] == "cpp_extension" && at(i + 1, "as") && i + 2 < n) extension_modules.insert(t[i + 2]);
    bool cpp = t[i] == "cpp_extension" && at(i + 1, "import");
    bool triton = t[i] == "triton" && at(i + 1, "import") && i > 0 && t[i - 1] == "from";
    if (!cpp && !triton) continue;
    for (size_t k = i + 2; k < n && t[k] != "\n"; ++k) {
      std::string name = t[k];
      if (name != "load" && name != "load_inline" && name != "jit" && name != "autotune") continue;
      std::string bound = at(k + 1, "as") && k + 2 < n ? t[k + 2] : name;
      (cpp ? extension_loaders : triton_jits).insert(bound);
    }
  }
  for (size_t i = 0; i < n; ++i) {
    const std::string& w = t[i];
    bool after_dot = i > 0 && t[i - 1] == ".";
    bool called = at(i + 1, "(");
    if (w == "load_inline" && called) return true;
    if (extension_modules.count(w) && at(i + 1, ".") && (at(i + 2, "load") || at(i + 2, "load_inline")) &&
        at(i + 3, "(")) {
      return true;
    }
    if (!after_dot && called && extension_loaders.count(w)) return true;
    if (w == "triton" && at(i + 1, ".") && (at(i + 2, "jit") || at(i + 2, "autotune")) &&
        (at(i + 3, "(") || (i > 0 && t[i - 1] == "@"))) {
      return true;
    }
    if (i > 0 && t[i - 1] == "@" && triton_jits.count(w)) return true;
    if ((w == "RawKernel" || w == "RawModule" || w == "ElementwiseKernel" || w == "ReductionKernel") &&
        called) {
      return true;
    }
    // Numba: @cuda.jit or @numba.cuda.jit.
    if (w == "cuda" && at(i + 1, ".") && at(i + 2, "jit") && i > 0 &&
        (t[i - 1] == "@" || (t[i - 1] == "." && i > 2 && t[i - 2] == "numba" && t[i - 3] == "@"))) {
      return true;
    }
    if (w == "jiterator" && at(i + 1, ".") && at(i + 2, "_create_jit_fn")) return true;
  }
  return false;
}

}  // namespace crl::kb
