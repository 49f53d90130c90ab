#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "lib/stats/stats.h"

namespace crl::stats {
namespace {

TEST_CASE("median, trimmed mean and MAD on known data", "[stats]") {
  CHECK(Median({3, 1, 2}) == 2);
  CHECK(Median({4, 1, 3, 2}) == 2.5);
  CHECK(Median({}) == 0);
  CHECK(TrimmedMean({1, 2, 3, 4, 100}, 0.2) == Approx(3));
  CHECK(Mad({1, 2, 3, 4, 100}) == 1);
  CHECK(RelativeSpread({10, 10, 10}) == 0);
}

TEST_CASE("report statistics keep only positive, finite values", "[stats]") {
  CHECK(PositiveFinite({2, 0, -3, std::nan(""), INFINITY, 8}) == std::vector<double>{2, 8});
  CHECK(GeometricMean({1, 4}) == Approx(2));
  CHECK(GeometricMean({2, 8, 0, -3, std::nan("")}) == Approx(4));
  CHECK(GeometricMean({1e300, 1e300}) == Approx(1e300));  // no overflow
  CHECK(GeometricMean({}) == 0);
  CHECK(Median(PositiveFinite({0, -1, 5})) == 5);
  CHECK(Median(PositiveFinite({0})) == 0);
  CHECK(Mean(PositiveFinite({1, 2, 6, 0})) == 3);
  CHECK(Mean({}) == 0);
}

TEST_CASE("the stopping rule waits for min_pairs, then for a tight interval", "[stats]") {
  StoppingRule rule{0.01, 20, 200};
  std::vector<double> ref(19, 2.0), cand(19, 1.0);
  CHECK_FALSE(ShouldStop(rule, ref, cand, 1));  // too few pairs, however steady
  ref.push_back(2.0);
  cand.push_back(1.0);
  CHECK(ShouldStop(rule, ref, cand, 1));  // identical pairs: a zero-width interval
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> noisy(0, 0.5);
  std::vector<double> r, c;
  for (int i = 0; i < 20; ++i) {
    r.push_back(2.0 * noisy(rng));
    c.push_back(1.0 * noisy(rng));
  }
  CHECK_FALSE(ShouldStop(rule, r, c, 1));  // 50% noise: nowhere near 1%
}

TEST_CASE("bucketed estimate reports bucket disagreement", "[stats]") {
  std::vector<double> steady(70, 1.0);
  double d = -1;
  CHECK(BucketedEstimate(steady, 7, &d) == 1.0);
  CHECK(d == 0);
  std::vector<double> drift;
  for (int i = 0; i < 70; ++i) drift.push_back(i < 10 ? 2.0 : 1.0);  // first bucket slow
  double est = BucketedEstimate(drift, 7, &d);
  CHECK(est == 1.0);  // the median of bucket means ignores one bad bucket
  CHECK(d == Approx(1.0));
}

TEST_CASE("rounding toward one never inflates a speedup or a slowdown", "[stats]") {
  CHECK(RoundTowardOne(1.237, 0.01) == Approx(1.23));
  CHECK(RoundTowardOne(0.876, 0.01) == Approx(0.88));
  CHECK(RoundTowardOne(1.0, 0.01) == Approx(1.0));
  CHECK(RoundTowardOne(2.5, 0) == 2.5);
}

TEST_CASE("bootstrap CI covers the true ratio and narrows with more samples", "[stats]") {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> noise(0.0, 0.05);
  auto draw = [&](int n, std::vector<double>* ref, std::vector<double>* cand) {
    for (int i = 0; i < n; ++i) {
      ref->push_back(2e-3 * noise(rng));
      cand->push_back(1e-3 * noise(rng));  // true speedup 2
    }
  };
  std::vector<double> r1, c1, r2, c2;
  draw(30, &r1, &c1);
  draw(600, &r2, &c2);
  SpeedupInterval small = BootstrapSpeedup(r1, c1, 1000, 1);
  SpeedupInterval large = BootstrapSpeedup(r2, c2, 1000, 1);
  CHECK(small.low < 2.0);
  CHECK(small.high > 2.0);
  CHECK(large.low < 2.0);
  CHECK(large.high > 2.0);
  CHECK(large.relative_half_width < small.relative_half_width);
  CHECK(large.relative_half_width < 0.02);
  // Deterministic for a seed.
  SpeedupInterval again = BootstrapSpeedup(r1, c1, 1000, 1);
  CHECK(again.low == small.low);
  CHECK(again.high == small.high);
}

}  // namespace
}  // namespace crl::stats
