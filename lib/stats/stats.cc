#include "lib/stats/stats.h"

#include <algorithm>
#include <cmath>

namespace crl::stats {
namespace {

// splitmix64: a small, well-mixed, reproducible generator for resampling.
uint64_t Next(uint64_t* s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double Percentile(std::vector<double>* sorted, double p) {
  if (sorted->empty()) return 0;
  double idx = p * (sorted->size() - 1);
  size_t lo = static_cast<size_t>(std::floor(idx));
  size_t hi = std::min(lo + 1, sorted->size() - 1);
  double frac = idx - lo;
  return (*sorted)[lo] * (1 - frac) + (*sorted)[hi] * frac;
}

}  // namespace

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + mid, v.end());
  double m = v[mid];
  if (v.size() % 2 == 0) {
    double below = *std::max_element(v.begin(), v.begin() + mid);
    m = 0.5 * (m + below);
  }
  return m;
}

bool IsPositiveFinite(double v) { return std::isfinite(v) && v > 0; }

std::vector<double> PositiveFinite(const std::vector<double>& v) {
  std::vector<double> out;
  for (double x : v) {
    if (IsPositiveFinite(x)) out.push_back(x);
  }
  return out;
}

double Mean(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double sum = 0;
  for (double x : v) sum += x;
  return sum / v.size();
}

double GeometricMean(const std::vector<double>& v) {
  double log_sum = 0;
  size_t n = 0;
  for (double x : v) {
    if (!IsPositiveFinite(x)) continue;
    log_sum += std::log(x);
    ++n;
  }
  return n ? std::exp(log_sum / n) : 0;
}

double TrimmedMean(std::vector<double> v, double trim) {
  if (v.empty()) return 0;
  trim = std::clamp(trim, 0.0, 0.49);
  std::sort(v.begin(), v.end());
  size_t cut = static_cast<size_t>(std::floor(v.size() * trim));
  double sum = 0;
  size_t n = 0;
  for (size_t i = cut; i + cut < v.size(); ++i, ++n) sum += v[i];
  return n ? sum / n : Median(v);
}

double Mad(const std::vector<double>& v) {
  double m = Median(v);
  std::vector<double> dev;
  dev.reserve(v.size());
  for (double x : v) dev.push_back(std::fabs(x - m));
  return Median(dev);
}

double RelativeSpread(const std::vector<double>& v) {
  double m = Median(v);
  return m > 0 ? Mad(v) / m : 0;
}

double BucketedEstimate(const std::vector<double>& v, int buckets, double* disagreement) {
  if (disagreement) *disagreement = 0;
  if (v.empty()) return 0;
  buckets = std::max(1, std::min<int>(buckets, static_cast<int>(v.size())));
  std::vector<double> means;
  for (int b = 0; b < buckets; ++b) {
    size_t begin = v.size() * b / buckets, end = v.size() * (b + 1) / buckets;
    double sum = 0;
    for (size_t i = begin; i < end; ++i) sum += v[i];
    means.push_back(sum / (end - begin));
  }
  auto [lo, hi] = std::minmax_element(means.begin(), means.end());
  if (disagreement && *lo > 0) *disagreement = *hi / *lo - 1;
  return Median(means);
}

double RoundTowardOne(double speedup, double step) {
  if (step <= 0) return speedup;
  double scaled = speedup / step;
  return (speedup >= 1 ? std::floor(scaled + 1e-9) : std::ceil(scaled - 1e-9)) * step;
}

SpeedupInterval BootstrapSpeedup(const std::vector<double>& ref,
                                 const std::vector<double>& candidate, int resamples,
                                 uint64_t seed) {
  SpeedupInterval out;
  const size_t n = std::min(ref.size(), candidate.size());
  if (n == 0) return out;
  double cm = Median(std::vector<double>(candidate.begin(), candidate.begin() + n));
  out.estimate = cm > 0 ? Median(std::vector<double>(ref.begin(), ref.begin() + n)) / cm : 0;
  resamples = std::max(resamples, 100);
  std::vector<double> estimates;
  estimates.reserve(resamples);
  std::vector<double> r(n), c(n);
  uint64_t state = seed;
  for (int k = 0; k < resamples; ++k) {
    for (size_t i = 0; i < n; ++i) {
      size_t j = Next(&state) % n;
      r[i] = ref[j];
      c[i] = candidate[j];
    }
    double m = Median(c);
    if (m > 0) estimates.push_back(Median(r) / m);
  }
  std::sort(estimates.begin(), estimates.end());
  out.low = Percentile(&estimates, 0.025);
  out.high = Percentile(&estimates, 0.975);
  out.relative_half_width = out.estimate > 0 ? (out.high - out.low) / 2 / out.estimate : 0;
  return out;
}

bool ShouldStop(const StoppingRule& rule, const std::vector<double>& ref,
                const std::vector<double>& candidate, uint64_t seed) {
  if (static_cast<int>(std::min(ref.size(), candidate.size())) < rule.min_pairs) return false;
  return BootstrapSpeedup(ref, candidate, rule.resamples, seed).relative_half_width <
         rule.target_rel_ci;
}

Interval WilsonInterval(int successes, int n) {
  if (n <= 0) return {};
  const double z = 1.959963984540054, p = static_cast<double>(successes) / n;
  const double denom = 1 + z * z / n;
  const double centre = (p + z * z / (2.0 * n)) / denom;
  const double half = z * std::sqrt(p * (1 - p) / n + z * z / (4.0 * n * n)) / denom;
  return {std::max(0.0, centre - half), std::min(1.0, centre + half)};
}

double SignTestP(int plus, int minus) {
  const int n = plus + minus;
  if (n <= 0) return 1;
  const int k = std::min(plus, minus);
  // P(X <= k) for X ~ Binomial(n, 1/2), summed in log space.
  double tail = 0;
  for (int i = 0; i <= k; ++i) {
    tail += std::exp(std::lgamma(n + 1.0) - std::lgamma(i + 1.0) - std::lgamma(n - i + 1.0) - n * std::log(2.0));
  }
  return std::min(1.0, 2 * tail);
}

Interval HierarchicalBootstrap(const std::vector<std::vector<double>>& groups, int resamples, uint64_t seed) {
  std::vector<const std::vector<double>*> g;
  for (const auto& v : groups) {
    if (!v.empty()) g.push_back(&v);
  }
  if (g.empty()) return {};
  resamples = std::max(resamples, 100);
  std::vector<double> estimates;
  estimates.reserve(resamples);
  uint64_t state = seed;
  for (int k = 0; k < resamples; ++k) {
    double sum = 0;
    for (size_t i = 0; i < g.size(); ++i) {
      const std::vector<double>& pick = *g[Next(&state) % g.size()];
      double inner = 0;
      for (size_t j = 0; j < pick.size(); ++j) inner += pick[Next(&state) % pick.size()];
      sum += inner / pick.size();
    }
    estimates.push_back(sum / g.size());
  }
  std::sort(estimates.begin(), estimates.end());
  return {Percentile(&estimates, 0.025), Percentile(&estimates, 0.975)};
}

}  // namespace crl::stats
