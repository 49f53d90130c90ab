#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "crl/kernel.h"
#include "runner/protocol.h"
#include "services/worker/verify/compare.h"

namespace crl {
namespace {

runner::TensorSpec Spec(int32_t dtype, int64_t n) { return {"y", dtype, {n}}; }

std::string Floats(std::vector<float> v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4);
}

TEST_CASE("within tolerance matches; outside reports the first index and counts", "[compare]") {
  Tolerance tol{1e-4, 1e-4};
  auto r = CompareTensor(Spec(CRL_FLOAT32, 3), Floats({1, 2, 3.0001f}), Floats({1, 2, 3}), tol);
  CHECK(r.kind == CompareResult::kMatch);
  r = CompareTensor(Spec(CRL_FLOAT32, 4), Floats({1, 2.5f, 3, 9}), Floats({1, 2, 3, 4}), tol);
  CHECK(r.kind == CompareResult::kMismatch);
  CHECK(r.mismatches == 2);
  CHECK(r.numeric_mismatches == 2);  // both failed on numbers alone
  CHECK(r.first_index == 1);
  CHECK(r.max_abs_error == Approx(5.0));
  CHECK(r.detail.find("y[1]") != std::string::npos);
}

TEST_CASE("poisoned elements are reported as unwritten, NaN as non-finite", "[compare]") {
  Tolerance tol{1e-4, 1e-4};
  float poison;
  uint32_t bits = runner::kPoisonFloat32;
  std::memcpy(&poison, &bits, 4);
  auto r = CompareTensor(Spec(CRL_FLOAT32, 3), Floats({1, poison, 3}), Floats({1, 2, 3}), tol);
  CHECK(r.kind == CompareResult::kUnwritten);
  CHECK(r.detail.find("not written") != std::string::npos);
  float nan = std::numeric_limits<float>::quiet_NaN();
  r = CompareTensor(Spec(CRL_FLOAT32, 2), Floats({nan, 2}), Floats({1, 2}), tol);
  CHECK(r.kind == CompareResult::kNonFinite);
  // A NaN is not "outside the tolerance by max_abs_error": not numeric.
  r = CompareTensor(Spec(CRL_FLOAT32, 3), Floats({nan, 2.5f, 3}), Floats({1, 2, 3}), tol);
  CHECK(r.mismatches == 2);
  CHECK(r.numeric_mismatches == 1);
  CHECK(r.max_abs_error == Approx(0.5));
  float inf = std::numeric_limits<float>::infinity();
  r = CompareTensor(Spec(CRL_FLOAT32, 2), Floats({inf, 2}), Floats({inf, 2}), tol);
  CHECK(r.kind == CompareResult::kMatch);
  r = CompareTensor(Spec(CRL_FLOAT32, 1), Floats({nan}), Floats({nan}), tol);
  CHECK(r.kind == CompareResult::kMatch);
}

TEST_CASE("the one-pass check of matching floats reports the errors the element-wise pass does", "[compare]") {
  // Matching throughout: the fast pass answers. One element outside: the
  // element-wise pass answers, and its largest errors cover the same
  // matching elements (plus the outside one).
  Tolerance tol{1e-3, 1e-3};
  std::vector<float> want(1000), got(1000);
  for (int i = 0; i < 1000; ++i) {
    want[i] = 0.5f * i - 100;
    got[i] = want[i] + (i % 7) * 1e-4f;
  }
  double largest = 0;
  for (int i = 0; i < 1000; ++i) largest = std::max(largest, std::fabs(double(got[i]) - double(want[i])));
  auto fast = CompareTensor(Spec(CRL_FLOAT32, 1000), Floats(got), Floats(want), tol);
  CHECK(fast.kind == CompareResult::kMatch);
  CHECK(fast.max_abs_error == largest);
  CHECK(largest > 5e-4);
  got[500] = want[500] + 1;
  auto slow = CompareTensor(Spec(CRL_FLOAT32, 1000), Floats(got), Floats(want), tol);
  CHECK(slow.kind == CompareResult::kMismatch);
  CHECK(slow.mismatches == 1);
  CHECK(slow.max_abs_error == Approx(1.0));
  got[500] = want[500];
  got[501] = want[501] + 0.25f;  // 0.25 relative to |150.5|, the largest relative error
  auto rel = CompareTensor(Spec(CRL_FLOAT32, 1000), Floats(got), Floats(want), Tolerance{1, 0});
  CHECK(rel.kind == CompareResult::kMatch);
  CHECK(rel.max_rel_error == Approx(0.25 / 150.5));
  std::vector<double> dw{1, 2, 3}, dg{1, 2, 3.0005};
  std::string sw(reinterpret_cast<char*>(dw.data()), 24), sg(reinterpret_cast<char*>(dg.data()), 24);
  auto d = CompareTensor({"y", CRL_FLOAT64, {3}}, sg, sw, tol);
  CHECK(d.kind == CompareResult::kMatch);
  CHECK(d.max_abs_error == Approx(5e-4));
}

TEST_CASE("integers compare exactly and sizes must match", "[compare]") {
  std::vector<int32_t> a{1, 2, 3}, b{1, 2, 4};
  std::string sa(reinterpret_cast<char*>(a.data()), 12), sb(reinterpret_cast<char*>(b.data()), 12);
  auto r = CompareTensor({"idx", CRL_INT32, {3}}, sa, sb, Tolerance{0.5, 0.5});
  CHECK(r.kind == CompareResult::kMismatch);
  CHECK(r.first_index == 2);
  r = CompareTensor({"idx", CRL_INT32, {3}}, sa.substr(0, 8), sb, Tolerance{});
  CHECK(r.kind == CompareResult::kSizeMismatch);
}

TEST_CASE("a large output is compared on several threads with the answer of one", "[compare]") {
  // Past the parallel threshold (4 M elements), in parts that end at
  // uneven places.
  const int64_t n = (int64_t{1} << 22) + 12345;
  std::vector<float> want(n), got(n);
  for (int64_t i = 0; i < n; ++i) {
    want[i] = static_cast<float>(std::sin(0.001 * i));
    got[i] = want[i] + static_cast<float>((i % 7) * 1e-6);
  }
  got[n - 3] = want[n - 3] + 5e-5f;  // the largest error, in the last part
  const Tolerance tol{1e-4, 1e-4};
  auto r = CompareTensor(Spec(CRL_FLOAT32, n), Floats(got), Floats(want), tol);
  REQUIRE(r.kind == CompareResult::kMatch);
  double max_abs = 0;
  for (int64_t i = 0; i < n; ++i) max_abs = std::max(max_abs, std::fabs(double(got[i]) - double(want[i])));
  CHECK(r.max_abs_error == max_abs);
  CHECK(TensorWithin(Spec(CRL_FLOAT32, n), Floats(got), Floats(want), tol));
  // One element outside, in a middle part: a mismatch, counted once.
  got[n / 2] = want[n / 2] + 1.0f;
  r = CompareTensor(Spec(CRL_FLOAT32, n), Floats(got), Floats(want), tol);
  CHECK(r.kind == CompareResult::kMismatch);
  CHECK(r.mismatches == 1);
  CHECK(r.first_index == n / 2);
  CHECK_FALSE(TensorWithin(Spec(CRL_FLOAT32, n), Floats(got), Floats(want), tol));
}

TEST_CASE("TensorWithin answers as CompareTensor's match, and takes a constant for every element", "[compare]") {
  const Tolerance tol{1e-4, 1e-4};
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  float poison;
  uint32_t bits = runner::kPoisonFloat32;
  std::memcpy(&poison, &bits, 4);
  const std::vector<std::pair<std::vector<float>, std::vector<float>>> cases = {
      {{1, 2, 3.00001f}, {1, 2, 3}},  // within
      {{1, 2.5f, 3}, {1, 2, 3}},      // outside
      {{1, nan, inf}, {1, nan, inf}},  // NaN where NaN, Inf where the same Inf: a match
      {{1, 2, -inf}, {1, 2, inf}},    // the other Inf
      {{1, nan, 3}, {1, 2, 3}},       // NaN where finite
      {{1, poison, 3}, {1, 2, 3}},    // unwritten
      {{1, 2, 3}, {1, 2, nan}},       // a number where NaN
  };
  for (const auto& [got, want] : cases) {
    INFO(got[1] << " " << got[2] << " against " << want[1] << " " << want[2]);
    const bool match = CompareTensor(Spec(CRL_FLOAT32, 3), Floats(got), Floats(want), tol).kind ==
                       CompareResult::kMatch;
    CHECK(TensorWithin(Spec(CRL_FLOAT32, 3), Floats(got), Floats(want), tol) == match);
  }
  // One element standing for all (a probe's constant).
  CHECK(TensorWithin(Spec(CRL_FLOAT32, 4), Floats({0}), Floats({0, 0, 1e-5f, -1e-5f}), tol, true));
  CHECK_FALSE(TensorWithin(Spec(CRL_FLOAT32, 4), Floats({0}), Floats({0, 0, 1, 0}), tol, true));
  CHECK(TensorWithin(Spec(CRL_FLOAT32, 3), Floats({2}), Floats({2, 2, 2.0001f}), tol, true));
  // Only when said: one element is otherwise a wrong size.
  CHECK_FALSE(TensorWithin(Spec(CRL_FLOAT32, 3), Floats({2}), Floats({2, 2, 2}), tol));
  CHECK_FALSE(TensorWithin(Spec(CRL_FLOAT32, 3), Floats({2, 2, 2}), Floats({2, 2, 2}), tol, true));
  // Sizes that fit neither way, and integers, which compare exactly.
  CHECK_FALSE(TensorWithin(Spec(CRL_FLOAT32, 4), Floats({0, 0}), Floats({0, 0, 0, 0}), tol));
  CHECK_FALSE(TensorWithin(Spec(CRL_FLOAT32, 4), Floats({0, 0, 0, 0}), Floats({0, 0}), tol));
  const int32_t a[3] = {1, 2, 3}, b[3] = {1, 2, 4};
  const std::string ia(reinterpret_cast<const char*>(a), 12), ib(reinterpret_cast<const char*>(b), 12);
  CHECK(TensorWithin(Spec(CRL_INT32, 3), ia, ia, tol));
  CHECK_FALSE(TensorWithin(Spec(CRL_INT32, 3), ia, ib, {10, 10}));
}

TEST_CASE("MeasureProbe gives the L2 distances between candidate, reference and a trivial solution", "[compare]") {
  const Tolerance tol{1e-4, 1e-4};
  // Reference (3e-5, 4e-5): zeros are 5e-5 from it, within the tolerance.
  const std::string want = Floats({3e-5f, 4e-5f});
  ProbeDistances d = MeasureProbe(Spec(CRL_FLOAT32, 2), Floats({3e-5f, 4e-5f}), want, Floats({0}), true, tol);
  REQUIRE(d.valid);
  CHECK(d.candidate == 0);
  CHECK(d.probe == Approx(5e-5).epsilon(1e-5));
  CHECK(d.candidate_probe == Approx(5e-5).epsilon(1e-5));
  CHECK(d.reference == Approx(5e-5).epsilon(1e-5));
  CHECK(d.probe_share_of_tolerance == Approx(4e-5 / (1e-4 + 1e-4 * 4e-5)).epsilon(1e-4));
  // A candidate that is the trivial solution, given whole.
  d = MeasureProbe(Spec(CRL_FLOAT32, 2), Floats({0, 0}), want, Floats({0, 0}), false, tol);
  REQUIRE(d.valid);
  CHECK(d.candidate_probe == 0);
  CHECK(d.candidate == Approx(5e-5).epsilon(1e-5));
  // Not measurable: a wrong size, a NaN.
  CHECK_FALSE(MeasureProbe(Spec(CRL_FLOAT32, 2), Floats({0}), want, Floats({0}), true, tol).valid);
  CHECK_FALSE(MeasureProbe(Spec(CRL_FLOAT32, 2), Floats({0, std::nanf("")}), want, Floats({0}), true, tol).valid);
}

}  // namespace
}  // namespace crl
