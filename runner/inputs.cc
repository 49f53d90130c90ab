// runner/inputs.cc — see inputs.h.
//
// Reproducibility: this file must be compiled with -ffp-contract=off (set in
// runner/CMakeLists.txt) so no compiler fuses a*b+c into an FMA, and it uses
// only IEEE-exact operations (+ - * / sqrt) plus its own log and sin/cos
// (libm's differ between glibc versions in the last bit). The same
// (seed, distribution, dtype, numel) therefore gives the same bytes on every
// x86-64/aarch64 machine, whichever libm and compiler built it.
#include "runner/inputs.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "crl/kernel.h"
#include "runner/dtype.h"

namespace crl::runner {

uint64_t SplitMix64(uint64_t* state) {
  *state += 0x9E3779B97F4A7C15ull;
  uint64_t z = *state;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t DeriveSeed(uint64_t seed, uint64_t index) {
  uint64_t state = seed + 0x9E3779B97F4A7C15ull * (index + 1);
  // One splitmix64 finalisation of `state` (SplitMix64 adds the increment
  // first; undo it so the finaliser sees `state` itself).
  state -= 0x9E3779B97F4A7C15ull;
  return SplitMix64(&state);
}

namespace {

// ---------------------------------------------------------------------------
// Deterministic math (IEEE basic operations only).

// Natural log for x > 0, finite. Accurate to a few ulp; deterministic.
double DetLog(double x) {
  int e = 0;
  double m = std::frexp(x, &e);  // x = m * 2^e, m in [0.5, 1), exact
  if (m < 0.70710678118654752440) {
    m *= 2.0;
    e -= 1;
  }
  // log(m) = 2 atanh(s), s = (m - 1) / (m + 1), |s| <= 0.1716.
  const double s = (m - 1.0) / (m + 1.0);
  const double s2 = s * s;
  double poly = 1.0 / 27.0;
  poly = 1.0 / 25.0 + s2 * poly;
  poly = 1.0 / 23.0 + s2 * poly;
  poly = 1.0 / 21.0 + s2 * poly;
  poly = 1.0 / 19.0 + s2 * poly;
  poly = 1.0 / 17.0 + s2 * poly;
  poly = 1.0 / 15.0 + s2 * poly;
  poly = 1.0 / 13.0 + s2 * poly;
  poly = 1.0 / 11.0 + s2 * poly;
  poly = 1.0 / 9.0 + s2 * poly;
  poly = 1.0 / 7.0 + s2 * poly;
  poly = 1.0 / 5.0 + s2 * poly;
  poly = 1.0 / 3.0 + s2 * poly;
  const double log_m = 2.0 * s + 2.0 * s * (s2 * poly);
  const double kLn2Hi = 6.93147180369123816490e-01;
  const double kLn2Lo = 1.90821492927058770002e-10;
  const double de = static_cast<double>(e);
  return de * kLn2Hi + (log_m + de * kLn2Lo);
}

// sin and cos of b, |b| <= pi/4, by Taylor series (Horner).
void SinCosSmall(double b, double* s, double* c) {
  const double b2 = b * b;
  double sn = 0.0;
  double cs = 0.0;
  {
    // sin: b - b^3/3! + b^5/5! - ... (terms up to b^21)
    static const double kSin[] = {
        -1.0 / 6.0,
        1.0 / 120.0,
        -1.0 / 5040.0,
        1.0 / 362880.0,
        -1.0 / 39916800.0,
        1.0 / 6227020800.0,
        -1.0 / 1307674368000.0,
        1.0 / 355687428096000.0,
        -1.0 / 121645100408832000.0,
        1.0 / 51090942171709440000.0,
    };
    double p = kSin[9];
    for (int i = 8; i >= 0; --i) p = kSin[i] + b2 * p;
    sn = b + b * (b2 * p);
  }
  {
    // cos: 1 - b^2/2! + b^4/4! - ... (terms up to b^20)
    static const double kCos[] = {
        -1.0 / 2.0,
        1.0 / 24.0,
        -1.0 / 720.0,
        1.0 / 40320.0,
        -1.0 / 3628800.0,
        1.0 / 479001600.0,
        -1.0 / 87178291200.0,
        1.0 / 20922789888000.0,
        -1.0 / 6402373705728000.0,
        1.0 / 2432902008176640000.0,
    };
    double p = kCos[9];
    for (int i = 8; i >= 0; --i) p = kCos[i] + b2 * p;
    cs = 1.0 + b2 * p;
  }
  *s = sn;
  *c = cs;
}

// sin(2 pi u) and cos(2 pi u) for u in [0, 1), reduced exactly via u.
void SinCos2Pi(double u, double* s, double* c) {
  const double v = u * 4.0;  // exact
  int q = static_cast<int>(v);
  if (q > 3) q = 3;
  const double f = v - q;  // exact, in [0, 1)
  const bool flip = f > 0.5;
  const double g = flip ? 1.0 - f : f;  // exact (Sterbenz), <= 0.5
  const double kHalfPi = 1.57079632679489661923;
  double sb, cb;
  SinCosSmall(g * kHalfPi, &sb, &cb);
  // alpha = f * pi/2: (sin, cos) of alpha.
  const double sa = flip ? cb : sb;
  const double ca = flip ? sb : cb;
  switch (q) {
    case 0: *s = sa; *c = ca; break;
    case 1: *s = ca; *c = -sa; break;
    case 2: *s = -sa; *c = -ca; break;
    default: *s = -ca; *c = sa; break;
  }
}

// ---------------------------------------------------------------------------
// The random stream.
class Stream {
 public:
  explicit Stream(uint64_t seed) : state_(seed) {}
  uint64_t Next() { return SplitMix64(&state_); }
  // Uniform in [0, 1) with 53 random bits.
  double Uniform() { return static_cast<double>(Next() >> 11) * (1.0 / 9007199254740992.0); }
  // Standard normal (Box-Muller, both outputs used in turn).
  double Normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double u1 = 1.0 - Uniform();  // (0, 1]
    const double u2 = Uniform();
    const double r = std::sqrt(-2.0 * DetLog(u1));
    double s, c;
    SinCos2Pi(u2, &s, &c);
    spare_ = r * s;
    has_spare_ = true;
    return r * c;
  }
  // Uniform integer in [lo, hi] (lo <= hi).
  int64_t Int(int64_t lo, int64_t hi) {
    const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo) + 1;
    const uint64_t x = Next();
    if (span == 0) return static_cast<int64_t>(x);  // full 64-bit range
    const uint64_t off =
        static_cast<uint64_t>((static_cast<unsigned __int128>(x) * span) >> 64);
    return static_cast<int64_t>(static_cast<uint64_t>(lo) + off);
  }

 private:
  uint64_t state_;
  bool has_spare_ = false;
  double spare_ = 0;
};

// ---------------------------------------------------------------------------
// Parsing.

void SkipSpace(const std::string& t, size_t* i) {
  while (*i < t.size() && (t[*i] == ' ' || t[*i] == '\t')) ++*i;
}

bool ParseNumber(const std::string& t, size_t* i, double* out) {
  SkipSpace(t, i);
  size_t start = *i;
  while (*i < t.size()) {
    char ch = t[*i];
    if ((ch >= '0' && ch <= '9') || ch == '+' || ch == '-' || ch == '.' || ch == 'e' ||
        ch == 'E') {
      ++*i;
    } else {
      break;
    }
  }
  if (*i == start) return false;
  const char* b = t.data() + start;
  const char* e = t.data() + *i;
  if (*b == '+') ++b;  // from_chars does not accept a leading '+'
  auto res = std::from_chars(b, e, *out);
  return res.ec == std::errc() && res.ptr == e && std::isfinite(*out);
}

bool IsIntegral(double v) { return std::isfinite(v) && std::floor(v) == v; }

struct IntRange {
  double lo = 0;
  double hi = 0;
};

bool DtypeIntRange(int32_t dtype, IntRange* r) {
  switch (dtype) {
    case CRL_INT8: *r = {-128, 127}; return true;
    case CRL_UINT8: *r = {0, 255}; return true;
    case CRL_BOOL: *r = {0, 1}; return true;
    case CRL_INT32: *r = {-2147483648.0, 2147483647.0}; return true;
    // +-2^63 are not representable as int64 upper bound: stay below.
    case CRL_INT64: *r = {-9223372036854775808.0, 9223372036854774784.0}; return true;
    default: return false;
  }
}

std::string Num(double v) {
  char buf[64];
  snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

}  // namespace

bool ParseDistribution(const std::string& text, Distribution* dist, std::string* error) {
  auto fail = [&](const std::string& why) {
    if (error) *error = "bad distribution '" + text + "': " + why;
    return false;
  };
  size_t i = 0;
  SkipSpace(text, &i);
  size_t name_start = i;
  while (i < text.size() && text[i] >= 'a' && text[i] <= 'z') ++i;
  const std::string name = text.substr(name_start, i - name_start);
  SkipSpace(text, &i);
  if (i >= text.size() || text[i] != '(') return fail("expected '(' after the name");
  ++i;
  std::vector<double> args;
  SkipSpace(text, &i);
  if (i < text.size() && text[i] == ')') {
    ++i;
  } else {
    for (;;) {
      double v;
      if (!ParseNumber(text, &i, &v)) return fail("expected a finite number");
      args.push_back(v);
      SkipSpace(text, &i);
      if (i < text.size() && text[i] == ',') {
        ++i;
        continue;
      }
      if (i < text.size() && text[i] == ')') {
        ++i;
        break;
      }
      return fail("expected ',' or ')'");
    }
  }
  SkipSpace(text, &i);
  if (i != text.size()) return fail("trailing characters");

  Distribution d;
  auto want = [&](size_t n) { return args.size() == n; };
  if (name == "uniform") {
    if (!want(2)) return fail("uniform takes (a, b)");
    d.kind = Distribution::kUniform;
    d.a = args[0];
    d.b = args[1];
    if (!(d.a < d.b)) return fail("uniform needs a < b");
  } else if (name == "normal") {
    if (!want(2)) return fail("normal takes (mu, sigma)");
    d.kind = Distribution::kNormal;
    d.a = args[0];
    d.b = args[1];
    if (!(d.b >= 0)) return fail("normal needs sigma >= 0");
  } else if (name == "randint") {
    if (!want(2)) return fail("randint takes (a, b)");
    d.kind = Distribution::kRandint;
    d.a = args[0];
    d.b = args[1];
    if (!IsIntegral(d.a) || !IsIntegral(d.b)) return fail("randint needs integer bounds");
    if (!(d.a <= d.b)) return fail("randint needs a <= b");
  } else if (name == "constant") {
    if (!want(1)) return fail("constant takes (c)");
    d.kind = Distribution::kConstant;
    d.a = args[0];
  } else if (name == "sparse") {
    if (!want(3)) return fail("sparse takes (p, a, b)");
    d.kind = Distribution::kSparse;
    d.a = args[0];
    d.b = args[1];
    d.c = args[2];
    if (!(d.a >= 0 && d.a <= 1)) return fail("sparse needs 0 <= p <= 1");
    if (!(d.b < d.c)) return fail("sparse needs a < b");
  } else {
    return fail("unknown distribution '" + name + "'");
  }
  *dist = d;
  return true;
}

std::string DistributionToString(const Distribution& d) {
  switch (d.kind) {
    case Distribution::kUniform: return "uniform(" + Num(d.a) + ", " + Num(d.b) + ")";
    case Distribution::kNormal: return "normal(" + Num(d.a) + ", " + Num(d.b) + ")";
    case Distribution::kRandint: return "randint(" + Num(d.a) + ", " + Num(d.b) + ")";
    case Distribution::kConstant: return "constant(" + Num(d.a) + ")";
    case Distribution::kSparse:
      return "sparse(" + Num(d.a) + ", " + Num(d.b) + ", " + Num(d.c) + ")";
  }
  return "?";
}

namespace {

// Integer bounds [lo, hi] that `d` draws from for an integer dtype.
bool IntegerBounds(const Distribution& d, double* lo, double* hi) {
  switch (d.kind) {
    case Distribution::kUniform: *lo = std::ceil(d.a); *hi = std::floor(d.b); return true;
    case Distribution::kRandint: *lo = d.a; *hi = d.b; return true;
    case Distribution::kConstant: *lo = *hi = d.a; return true;
    case Distribution::kSparse: *lo = std::ceil(d.b); *hi = std::floor(d.c); return true;
    case Distribution::kNormal: return false;
  }
  return false;
}

}  // namespace

bool CheckDistributionForDtype(const Distribution& d, int32_t dtype, std::string* error) {
  auto fail = [&](const std::string& why) {
    if (error) *error = DistributionToString(d) + " for " + DtypeName(dtype) + ": " + why;
    return false;
  };
  if (!DtypeIsValid(dtype)) return fail("unknown dtype");
  if (DtypeIsFloat(dtype)) return true;
  double lo, hi;
  if (!IntegerBounds(d, &lo, &hi)) return fail("normal is for float dtypes only");
  if (!IsIntegral(lo) || !IsIntegral(hi)) return fail("constant must be an integer");
  if (lo > hi) return fail("the range holds no integer");
  IntRange r;
  DtypeIntRange(dtype, &r);
  if (lo < r.lo || hi > r.hi) return fail("values outside the dtype's range");
  return true;
}

std::string Generate(const Distribution& d, int32_t dtype, int64_t numel, uint64_t seed) {
  const size_t width = DtypeSize(dtype);
  if (width == 0 || numel <= 0) return std::string();
  std::string out(static_cast<size_t>(numel) * width, '\0');
  char* dst = &out[0];
  Stream rng(seed);

  if (DtypeIsFloat(dtype)) {
    for (int64_t i = 0; i < numel; ++i) {
      double v = 0;
      switch (d.kind) {
        case Distribution::kUniform: v = d.a + (d.b - d.a) * rng.Uniform(); break;
        case Distribution::kNormal: v = d.a + d.b * rng.Normal(); break;
        case Distribution::kRandint:
          v = static_cast<double>(rng.Int(static_cast<int64_t>(d.a), static_cast<int64_t>(d.b)));
          break;
        case Distribution::kConstant: v = d.a; break;
        case Distribution::kSparse:
          if (rng.Uniform() < d.a) v = d.b + (d.c - d.b) * rng.Uniform();
          break;
      }
      switch (dtype) {
        case CRL_FLOAT64: std::memcpy(dst + 8 * i, &v, 8); break;
        case CRL_FLOAT32: {
          float f = static_cast<float>(v);
          std::memcpy(dst + 4 * i, &f, 4);
          break;
        }
        case CRL_FLOAT16: {
          uint16_t h = FloatToHalf(static_cast<float>(v));
          std::memcpy(dst + 2 * i, &h, 2);
          break;
        }
        default: {
          uint16_t h = FloatToBfloat16(static_cast<float>(v));
          std::memcpy(dst + 2 * i, &h, 2);
          break;
        }
      }
    }
    return out;
  }

  // Integer and bool dtypes.
  IntRange r;
  DtypeIntRange(dtype, &r);
  auto clamp = [&](double v) { return v < r.lo ? r.lo : (v > r.hi ? r.hi : v); };
  double lo = 0, hi = 0;
  const bool ranged = IntegerBounds(d, &lo, &hi);
  if (ranged) {
    lo = clamp(lo);
    hi = clamp(hi);
    if (hi < lo) hi = lo;
  }
  const int64_t ilo = static_cast<int64_t>(lo);
  const int64_t ihi = static_cast<int64_t>(hi);
  for (int64_t i = 0; i < numel; ++i) {
    int64_t v = 0;
    switch (d.kind) {
      case Distribution::kUniform:
      case Distribution::kRandint: v = rng.Int(ilo, ihi); break;
      case Distribution::kConstant: v = ilo; break;
      case Distribution::kSparse:
        if (rng.Uniform() < d.a) v = rng.Int(ilo, ihi);
        break;
      case Distribution::kNormal:
        v = static_cast<int64_t>(clamp(std::nearbyint(d.a + d.b * rng.Normal())));
        break;
    }
    switch (dtype) {
      case CRL_INT64: std::memcpy(dst + 8 * i, &v, 8); break;
      case CRL_INT32: {
        int32_t x = static_cast<int32_t>(v);
        std::memcpy(dst + 4 * i, &x, 4);
        break;
      }
      default: dst[i] = static_cast<char>(static_cast<uint8_t>(v)); break;  // int8/uint8/bool
    }
  }
  return out;
}

}  // namespace crl::runner
