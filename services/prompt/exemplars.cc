#include "services/prompt/exemplars.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <numeric>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "lib/reward/names.h"
#include "lib/stats/stats.h"

namespace crl::prompt {
namespace {

// splitmix64: a small, reproducible generator (the same prompts on every
// platform for a seed).
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1).
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  // Uniform in [0, n).
  size_t Below(size_t n) { return static_cast<size_t>(Uniform() * n); }

 private:
  uint64_t state_;
};

bool IsPreprocessor(absl::string_view line) {
  for (const char* keyword : {"include", "define", "pragma", "if", "endif", "else", "elif",
                              "undef", "error", "line"}) {
    if (absl::StartsWith(line, keyword)) return true;
  }
  return false;
}

// Index of the member chosen by probabilities `p` (summing to 1) at `u`.
size_t Pick(const std::vector<double>& p, double u) {
  double acc = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    acc += p[i];
    if (u < acc) return i;
  }
  return p.size() - 1;
}

// exp(score / T) normalised, computed stably.
std::vector<double> Softmax(const std::vector<double>& scores, double temperature) {
  const double top = *std::max_element(scores.begin(), scores.end());
  std::vector<double> p;
  for (double s : scores) p.push_back(std::exp((s - top) / temperature));
  const double sum = std::accumulate(p.begin(), p.end(), 0.0);
  for (double& x : p) x /= sum;
  return p;
}

}  // namespace

SelectionParams ParamsFrom(const v1::ExemplarSelection& s, int legacy_num_exemplars) {
  SelectionParams p;
  if (s.strategy() != v1::EXEMPLAR_STRATEGY_UNSPECIFIED) p.strategy = s.strategy();
  if (s.num_exemplars() > 0) p.num_exemplars = s.num_exemplars();
  else if (legacy_num_exemplars > 0) p.num_exemplars = legacy_num_exemplars;
  p.num_exemplars = std::min(p.num_exemplars, kMaxExemplars);
  if (s.num_buckets() > 0) p.num_buckets = std::min(s.num_buckets(), kMaxPool);
  if (s.temperature() > 0) p.temperature = s.temperature();
  p.fast_guarantee = !s.no_fast_guarantee();
  p.trusted_only = s.trusted_only();
  return p;
}

double TrustedSpeedup(const v1::Exemplar& e) {
  if (!stats::IsPositiveFinite(e.speedup())) return 0;
  for (int f : e.flags()) {
    if (IsTrustFlag(static_cast<v1::Flag>(f))) return 0;
  }
  return e.speedup();
}

double Score(const v1::Exemplar& e) {
  if (double trusted = TrustedSpeedup(e); trusted > 0) return trusted;
  // Flagged: never fast. Untimed: no evidence either way.
  return stats::IsPositiveFinite(e.speedup()) ? std::min(e.speedup(), 1.0) : 1.0;
}

std::string NormalizedCode(const std::string& source) {
  // One pass, no allocation but the result: this runs over every pool entry.
  std::string code;
  code.reserve(source.size());
  enum { kCode, kLineComment, kBlockComment } state = kCode;
  bool line_start = true;  // only whitespace so far on this line
  const size_t n = source.size();
  for (size_t i = 0; i < n; ++i) {
    const char c = source[i];
    if (state == kLineComment) {
      if (c == '\n') {
        state = kCode;
        line_start = true;
      }
      continue;
    }
    if (state == kBlockComment) {
      if (c == '*' && i + 1 < n && source[i + 1] == '/') {
        state = kCode;
        ++i;
      }
      continue;
    }
    if (c == '\n') {
      line_start = true;
      continue;
    }
    if (absl::ascii_isspace(static_cast<unsigned char>(c))) continue;
    if (line_start && c == '#') {
      size_t j = i + 1;
      while (j < n && (source[j] == ' ' || source[j] == '\t')) ++j;
      if (!IsPreprocessor(absl::string_view(source).substr(j))) {
        state = kLineComment;  // a Python comment
        continue;
      }
    }
    line_start = false;
    if (c == '/' && i + 1 < n && (source[i + 1] == '/' || source[i + 1] == '*')) {
      state = source[i + 1] == '/' ? kLineComment : kBlockComment;
      ++i;
      continue;
    }
    code.push_back(c);
  }
  return code;
}

Selection SelectExemplars(const std::vector<v1::Exemplar>& pool, const SelectionParams& params,
                          uint64_t seed) {
  Selection out;
  if (params.strategy == v1::EXEMPLAR_STRATEGY_NONE || params.num_exemplars <= 0) {
    out.notes.push_back("exemplars: none requested");
    return out;
  }
  // Eligible variants, one per normalised code (the best-scoring copy).
  int unverified = 0, untrusted = 0, duplicates = 0;
  std::unordered_map<std::string, int> by_code;
  for (int i = 0; i < static_cast<int>(pool.size()); ++i) {
    const v1::Exemplar& e = pool[i];
    if (e.verdict() != v1::VERDICT_OK || e.source().empty()) {
      ++unverified;
      continue;
    }
    if (params.trusted_only && TrustedSpeedup(e) <= 0) {
      ++untrusted;
      continue;
    }
    auto [it, inserted] = by_code.emplace(NormalizedCode(e.source()), i);
    if (!inserted) {
      ++duplicates;
      if (Score(e) > Score(pool[it->second])) it->second = i;
    }
  }
  std::vector<int> eligible;
  for (const auto& [code, index] : by_code) eligible.push_back(index);
  std::sort(eligible.begin(), eligible.end());  // pool order, whatever the code
  if (unverified) out.notes.push_back(absl::StrCat("pool: ", unverified, " variant(s) skipped (not verified)"));
  if (untrusted) {
    out.notes.push_back(absl::StrCat("pool: ", untrusted, " variant(s) skipped (no trusted speedup: trusted_only)"));
  }
  if (duplicates) out.notes.push_back(absl::StrCat("pool: ", duplicates, " duplicate(s) of the same code skipped"));
  if (eligible.empty()) {
    out.notes.push_back("exemplars: none eligible");
    return out;
  }
  const size_t k = std::min<size_t>(params.num_exemplars, eligible.size());
  Rng rng(seed);
  std::vector<int> chosen;

  switch (params.strategy) {
    case v1::EXEMPLAR_STRATEGY_TOP_K: {
      std::vector<int> ranked = eligible;
      std::stable_sort(ranked.begin(), ranked.end(),
                       [&](int a, int b) { return Score(pool[a]) > Score(pool[b]); });
      chosen.assign(ranked.begin(), ranked.begin() + k);
      break;
    }
    case v1::EXEMPLAR_STRATEGY_UNIFORM: {
      std::vector<int> left = eligible;
      for (size_t n = 0; n < k; ++n) {
        const size_t j = rng.Below(left.size());
        chosen.push_back(left[j]);
        left.erase(left.begin() + j);
      }
      break;
    }
    default: {  // buckets
      double lo = INFINITY, hi = -INFINITY;
      for (int i : eligible) {
        lo = std::min(lo, std::log(Score(pool[i])));
        hi = std::max(hi, std::log(Score(pool[i])));
      }
      const int nb = hi > lo ? params.num_buckets : 1;
      std::vector<std::vector<int>> buckets(nb);
      for (int i : eligible) {
        int b = hi > lo ? static_cast<int>((std::log(Score(pool[i])) - lo) / (hi - lo) * nb) : 0;
        buckets[std::clamp(b, 0, nb - 1)].push_back(i);
      }
      buckets.erase(std::remove_if(buckets.begin(), buckets.end(),
                                   [](const auto& b) { return b.empty(); }),
                    buckets.end());
      auto bucket_scores = [&] {
        std::vector<double> s;
        for (const auto& b : buckets) {
          double sum = 0;
          for (int i : b) sum += Score(pool[i]);
          s.push_back(sum / b.size());
        }
        return s;
      };
      out.buckets = buckets;
      out.bucket_probabilities = Softmax(bucket_scores(), params.temperature);
      for (size_t n = 0; n < k; ++n) {
        const std::vector<double> p = Softmax(bucket_scores(), params.temperature);
        const size_t b = Pick(p, rng.Uniform());
        const size_t j = rng.Below(buckets[b].size());
        chosen.push_back(buckets[b][j]);
        buckets[b].erase(buckets[b].begin() + j);
        if (buckets[b].empty()) buckets.erase(buckets.begin() + b);
      }
      break;
    }
  }

  if (params.fast_guarantee) {
    auto fast = [&](int i) { return TrustedSpeedup(pool[i]) > 1; };
    if (std::none_of(chosen.begin(), chosen.end(), fast)) {
      std::vector<int> candidates;
      for (int i : eligible) {
        if (fast(i)) candidates.push_back(i);
      }
      if (!candidates.empty()) {
        const int pick = candidates[rng.Below(candidates.size())];
        // Replace the slowest choice.
        auto slowest = std::min_element(chosen.begin(), chosen.end(), [&](int a, int b) {
          return Score(pool[a]) < Score(pool[b]);
        });
        *slowest = pick;
        out.notes.push_back("exemplars: one faster than the reference shown (fast guarantee)");
      }
    }
  }
  std::stable_sort(chosen.begin(), chosen.end(),
                   [&](int a, int b) { return Score(pool[a]) < Score(pool[b]); });
  out.chosen = std::move(chosen);
  return out;
}

}  // namespace crl::prompt
