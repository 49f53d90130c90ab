#include <catch2/catch.hpp>

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
