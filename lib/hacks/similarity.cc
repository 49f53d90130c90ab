#include "lib/hacks/similarity.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <utility>

namespace crl::hacks {
namespace {

bool Word(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Identifiers and numbers as tokens, every other non-space character alone;
// `//`, `#` (Python) and `/* */` comments dropped. `#include` lines stay:
// a C++ preprocessor line starts with '#' followed by a word, so it is
// kept when the source looks like C++ (has a ';').
std::vector<std::string> Tokens(const std::string& s) {
  const bool cpp = s.find(';') != std::string::npos && s.find("#include") != std::string::npos;
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    const char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (c == '/' && i + 1 < s.size() && s[i + 1] == '/') {
      while (i < s.size() && s[i] != '\n') ++i;
    } else if (c == '/' && i + 1 < s.size() && s[i + 1] == '*') {
      const size_t end = s.find("*/", i + 2);
      i = end == std::string::npos ? s.size() : end + 2;
    } else if (c == '#' && !cpp) {
      while (i < s.size() && s[i] != '\n') ++i;
    } else if (Word(c)) {
      size_t j = i;
      while (j < s.size() && Word(s[j])) ++j;
      out.push_back(s.substr(i, j - i));
      i = j;
    } else {
      out.emplace_back(1, c);
      ++i;
    }
  }
  return out;
}

std::set<std::string> Shingles(const std::string& s) {
  const std::vector<std::string> t = Tokens(s);
  std::set<std::string> out;
  if (t.size() < 3) {
    if (!t.empty()) {
      std::string all;
      for (const auto& x : t) all += x + '\x1f';
      out.insert(all);
    }
    return out;
  }
  for (size_t i = 0; i + 3 <= t.size(); ++i) out.insert(t[i] + '\x1f' + t[i + 1] + '\x1f' + t[i + 2]);
  return out;
}

}  // namespace

double CodeSimilarity(const std::string& a, const std::string& b) {
  const std::set<std::string> x = Shingles(a), y = Shingles(b);
  if (x.empty() || y.empty()) return 0;
  size_t common = 0;
  for (const auto& s : x) common += y.count(s);
  return static_cast<double>(common) / static_cast<double>(x.size() + y.size() - common);
}

std::vector<v1::HackCase> MostSimilar(const std::vector<v1::HackCase>& cases, const std::string& source,
                                      const std::string& task_name, int n) {
  std::vector<std::pair<double, const v1::HackCase*>> scored;
  for (const auto& c : cases) {
    double score = CodeSimilarity(source, c.source());
    if (!task_name.empty() && c.task_name() == task_name) score += 0.25;
    scored.emplace_back(score, &c);
  }
  std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) {
    if (a.first != b.first) return a.first > b.first;
    return a.second->case_id() < b.second->case_id();
  });
  std::vector<v1::HackCase> out;
  for (size_t i = 0; i < scored.size() && static_cast<int>(out.size()) < n; ++i) out.push_back(*scored[i].second);
  return out;
}

}  // namespace crl::hacks
