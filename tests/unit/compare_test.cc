#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "crl/kernel.h"
#include "runner/protocol.h"
#include "services/worker/compare.h"

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

}  // namespace
}  // namespace crl
