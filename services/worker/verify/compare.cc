#include "services/worker/verify/compare.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <thread>
#include <vector>

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

// How element pair (g, w) compares: kMatch, or the kind of failure.
// `got_poison`/`want_poison`: the element holds the poison pattern written
// before the call. Integers and bools (not `is_float`) compare exactly.
CompareResult::Kind ElementVerdict(double g, double w, bool is_float, bool got_poison, bool want_poison,
                                   Tolerance tol) {
  if (is_float && got_poison && !want_poison) return CompareResult::kUnwritten;
  if (is_float && std::isnan(w)) return std::isnan(g) ? CompareResult::kMatch : CompareResult::kMismatch;
  if (is_float && !std::isfinite(g)) {
    return std::isinf(w) && g == w ? CompareResult::kMatch : CompareResult::kNonFinite;
  }
  if (is_float && std::isinf(w)) return CompareResult::kMismatch;
  if (!is_float) tol = Tolerance{0, 0};
  return std::fabs(g - w) <= tol.atol + tol.rtol * std::fabs(w) ? CompareResult::kMatch : CompareResult::kMismatch;
}

// Elements [begin, end) of a float32/float64 output in one tight pass: true
// when every element of both sides is finite and within the tolerance, with
// the largest errors in *max_abs / *max_rel as the element-wise pass below
// computes them. Stops at the first other element (NaN, Inf, poison,
// outside).
template <typename T>
bool RangeFiniteWithin(const char* got, const char* want, int64_t begin, int64_t end, Tolerance tol,
                       double* max_abs, double* max_rel) {
  double abs_max = 0, rel_max = 0;
  for (int64_t i = begin; i < end; ++i) {
    T gt, wt;
    std::memcpy(&gt, got + sizeof(T) * i, sizeof(T));
    std::memcpy(&wt, want + sizeof(T) * i, sizeof(T));
    const double g = gt, w = wt;
    const double abs_err = std::fabs(g - w);
    // False for a NaN on either side; an Inf in `want` is caught by the
    // isfinite (with rtol > 0 its bound would be Inf too).
    if (!(abs_err <= tol.atol + tol.rtol * std::fabs(w)) || !std::isfinite(w)) return false;
    abs_max = std::max(abs_max, abs_err);
    if (std::fabs(w) > tol.atol) rel_max = std::max(rel_max, abs_err / std::max(std::fabs(w), 1e-30));
  }
  *max_abs = abs_max;
  *max_rel = rel_max;
  return true;
}

// Outputs at least this large are compared on several threads.
constexpr int64_t kParallelElements = int64_t{1} << 22;

// The common case of a float32/float64 output that matches throughout:
// RangeFiniteWithin over the whole output, split over up to 8 threads when
// it is large (an output of hundreds of MB took ~0.4 s on one core of the
// GPU machine, and a verification compares several). False for any other
// output; the caller takes the element-wise pass for the details.
template <typename T>
bool AllFiniteWithin(const std::string& got, const std::string& want, int64_t n, Tolerance tol,
                     CompareResult* r) {
  const int64_t parts =
      n < kParallelElements ? 1 : std::clamp<int64_t>(std::thread::hardware_concurrency(), 1, 8);
  std::vector<double> max_abs(parts, 0), max_rel(parts, 0);
  std::vector<char> ok(parts, 0);
  auto run = [&](int64_t p) {
    ok[p] = RangeFiniteWithin<T>(got.data(), want.data(), n * p / parts, n * (p + 1) / parts, tol, &max_abs[p],
                                 &max_rel[p]);
  };
  std::vector<std::thread> threads;
  for (int64_t p = 1; p < parts; ++p) threads.emplace_back(run, p);
  run(0);
  for (auto& t : threads) t.join();
  if (std::find(ok.begin(), ok.end(), 0) != ok.end()) return false;
  r->max_abs_error = *std::max_element(max_abs.begin(), max_abs.end());
  r->max_rel_error = *std::max_element(max_rel.begin(), max_rel.end());
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
    const bool got_poison = is_float && IsPoison(got, spec.dtype, i);
    const bool want_poison = is_float && IsPoison(want, spec.dtype, i);
    const CompareResult::Kind fail = ElementVerdict(g, w, is_float, got_poison, want_poison, tol);
    // Both finite (and written): the errors count, and a failure is numeric.
    if (!is_float || (!(got_poison && !want_poison) && std::isfinite(g) && std::isfinite(w))) {
      double abs_err = std::fabs(g - w);
      double rel_err = abs_err / std::max(std::fabs(w), 1e-30);
      if (abs_err > r.max_abs_error) r.max_abs_error = abs_err;
      if (rel_err > r.max_rel_error && std::fabs(w) > tol.atol) r.max_rel_error = rel_err;
      if (fail == CompareResult::kMismatch) ++r.numeric_mismatches;
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

bool TensorWithin(const runner::TensorSpec& spec, const std::string& got, const std::string& want, Tolerance tol,
                  bool got_constant) {
  uint64_t bytes = 0;
  int64_t n = 0;
  if (!runner::SpecBytes(spec, &bytes) || !runner::SpecNumel(spec, &n) || want.size() != bytes) return false;
  const size_t element = runner::DtypeSize(spec.dtype);
  const bool constant = got_constant && n > 0;
  if (got.size() != (constant ? element : bytes)) return false;
  CompareResult unused;
  if (!constant && ((spec.dtype == CRL_FLOAT32 && AllFiniteWithin<float>(got, want, n, tol, &unused)) ||
                    (spec.dtype == CRL_FLOAT64 && AllFiniteWithin<double>(got, want, n, tol, &unused)))) {
    return true;
  }
  // Element by element, to the first that fails: a probe of a task that is
  // not degenerate fails at once.
  const bool is_float = runner::DtypeIsFloat(spec.dtype);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t gi = constant ? 0 : i;
    const double g = runner::ElementAsDouble(got.data(), spec.dtype, gi);
    const double w = runner::ElementAsDouble(want.data(), spec.dtype, i);
    const bool got_poison = is_float && IsPoison(got, spec.dtype, gi);
    const bool want_poison = is_float && IsPoison(want, spec.dtype, i);
    if (ElementVerdict(g, w, is_float, got_poison, want_poison, tol) != CompareResult::kMatch) return false;
  }
  return true;
}

ProbeDistances MeasureProbe(const runner::TensorSpec& spec, const std::string& got, const std::string& want,
                            const std::string& probe, bool probe_constant, Tolerance tol) {
  ProbeDistances d;
  uint64_t bytes = 0;
  int64_t n = 0;
  if (!runner::SpecBytes(spec, &bytes) || !runner::SpecNumel(spec, &n) || n <= 0) return d;
  const size_t element = runner::DtypeSize(spec.dtype);
  if (got.size() != bytes || want.size() != bytes || probe.size() != (probe_constant ? element : bytes)) return d;
  double candidate = 0, trivial = 0, between = 0, reference = 0, share = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double g = runner::ElementAsDouble(got.data(), spec.dtype, i);
    const double w = runner::ElementAsDouble(want.data(), spec.dtype, i);
    const double z = runner::ElementAsDouble(probe.data(), spec.dtype, probe_constant ? 0 : i);
    if (!std::isfinite(g) || !std::isfinite(w) || !std::isfinite(z)) return d;
    candidate += (g - w) * (g - w);
    trivial += (z - w) * (z - w);
    between += (g - z) * (g - z);
    reference += w * w;
    const double bound = tol.atol + tol.rtol * std::fabs(w);
    if (bound > 0) share = std::max(share, std::fabs(z - w) / bound);
  }
  d.valid = true;
  d.candidate = std::sqrt(candidate);
  d.probe = std::sqrt(trivial);
  d.candidate_probe = std::sqrt(between);
  d.reference = std::sqrt(reference);
  d.probe_share_of_tolerance = share;
  return d;
}

}  // namespace crl
