#include "services/worker/compare.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "crl/kernel.h"
#include "runner/dtype.h"

namespace crl {
namespace {

// True when element i holds the poison pattern written before the call.
bool IsPoison(const std::string& bytes, int32_t dtype, int64_t i) {
  const char* p = bytes.data();
  switch (dtype) {
    case CRL_FLOAT32: {
      uint32_t v;
      std::memcpy(&v, p + 4 * i, 4);
      return v == runner::kPoisonFloat32;
    }
    case CRL_FLOAT64: {
      uint64_t v;
      std::memcpy(&v, p + 8 * i, 8);
      return v == runner::kPoisonFloat64;
    }
    case CRL_FLOAT16: {
      uint16_t v;
      std::memcpy(&v, p + 2 * i, 2);
      return v == runner::kPoisonFloat16;
    }
    case CRL_BFLOAT16: {
      uint16_t v;
      std::memcpy(&v, p + 2 * i, 2);
      return v == runner::kPoisonBfloat16;
    }
    default:
      return false;  // integer poison is a valid value; exact comparison catches it
  }
}

// The common case of a float32/float64 output in one tight pass: true when
// every element of both sides is finite and within the tolerance, with the
// largest errors in *r as the element-wise pass below computes them. Any
// other element (NaN, Inf, poison, outside) returns false and the caller
// takes that pass for the details. An output of hundreds of MB compared
// element by element through the dtype switch took about a second.
template <typename T>
bool AllFiniteWithin(const std::string& got, const std::string& want, int64_t n, Tolerance tol,
                     CompareResult* r) {
  double max_abs = 0, max_rel = 0;
  for (int64_t i = 0; i < n; ++i) {
    T gt, wt;
    std::memcpy(&gt, got.data() + sizeof(T) * i, sizeof(T));
    std::memcpy(&wt, want.data() + sizeof(T) * i, sizeof(T));
    const double g = gt, w = wt;
    const double abs_err = std::fabs(g - w);
    // False for a NaN on either side; an Inf in `want` is caught by the
    // isfinite (with rtol > 0 its bound would be Inf too).
    if (!(abs_err <= tol.atol + tol.rtol * std::fabs(w)) || !std::isfinite(w)) return false;
    max_abs = std::max(max_abs, abs_err);
    if (std::fabs(w) > tol.atol) max_rel = std::max(max_rel, abs_err / std::max(std::fabs(w), 1e-30));
  }
  r->max_abs_error = max_abs;
  r->max_rel_error = max_rel;
  return true;
}

}  // namespace

CompareResult CompareTensor(const runner::TensorSpec& spec, const std::string& got,
                            const std::string& want, Tolerance tol) {
  CompareResult r;
  uint64_t bytes = 0;
  int64_t n = 0;
  runner::SpecBytes(spec, &bytes);
  runner::SpecNumel(spec, &n);
  if (got.size() != bytes || want.size() != bytes) {
    r.kind = CompareResult::kSizeMismatch;
    r.detail = absl::StrCat(spec.name, ": expected ", bytes, " bytes, got ", got.size());
    return r;
  }
  if ((spec.dtype == CRL_FLOAT32 && AllFiniteWithin<float>(got, want, n, tol, &r)) ||
      (spec.dtype == CRL_FLOAT64 && AllFiniteWithin<double>(got, want, n, tol, &r))) {
    return r;
  }
  const bool is_float = runner::DtypeIsFloat(spec.dtype);
  if (!is_float) tol = Tolerance{0, 0};  // integers and bools compare exactly
  for (int64_t i = 0; i < n; ++i) {
    double g = runner::ElementAsDouble(got.data(), spec.dtype, i);
    double w = runner::ElementAsDouble(want.data(), spec.dtype, i);
    CompareResult::Kind fail = CompareResult::kMatch;
    if (is_float && IsPoison(got, spec.dtype, i) && !IsPoison(want, spec.dtype, i)) {
      fail = CompareResult::kUnwritten;
    } else if (is_float && std::isnan(w)) {
      if (!std::isnan(g)) fail = CompareResult::kMismatch;
    } else if (is_float && !std::isfinite(g)) {
      if (!(std::isinf(w) && g == w)) fail = CompareResult::kNonFinite;
    } else if (is_float && std::isinf(w)) {
      fail = CompareResult::kMismatch;
    } else {
      double abs_err = std::fabs(g - w);
      double rel_err = abs_err / std::max(std::fabs(w), 1e-30);
      if (abs_err > r.max_abs_error) r.max_abs_error = abs_err;
      if (rel_err > r.max_rel_error && std::fabs(w) > tol.atol) r.max_rel_error = rel_err;
      if (!(abs_err <= tol.atol + tol.rtol * std::fabs(w))) {
        fail = CompareResult::kMismatch;
        ++r.numeric_mismatches;
      }
    }
    if (fail == CompareResult::kMatch) continue;
    ++r.mismatches;
    // The most telling failure kind wins: unwritten > non-finite > mismatch.
    if (r.first_index < 0) {
      r.first_index = i;
      r.detail = absl::StrCat(spec.name, "[", i, "]: got ", g, ", want ", w);
    }
    if (r.kind == CompareResult::kMatch || fail < r.kind) r.kind = fail;
  }
  if (r.kind == CompareResult::kUnwritten) {
    r.detail = absl::StrCat(spec.name, ": ", r.mismatches,
                            " element(s) not written (still hold the poison pattern); first ",
                            r.detail);
  } else if (r.kind == CompareResult::kNonFinite) {
    r.detail = absl::StrCat(spec.name, ": NaN/Inf where the reference is finite; first ", r.detail);
  } else if (r.kind == CompareResult::kMismatch) {
    r.detail = absl::StrCat(spec.name, ": ", r.mismatches, " of ", n,
                            " element(s) outside atol=", tol.atol, " rtol=", tol.rtol,
                            "; first ", r.detail);
  }
  return r;
}

}  // namespace crl
