// runner/inputs.h — deterministic, platform-independent input generation.
//
// The worker and the runner both use these functions, so the worker can
// regenerate any input a runner generated from (seed, distribution, dtype,
// numel). Nothing here uses std:: distributions or libm-dependent shortcuts
// beyond log/sqrt/cos (IEEE correctly-rounded enough on glibc for our use;
// see GenerateNormal's note).
//
// Random stream: splitmix64. Generate(dist, dtype, numel, seed) starts a
// splitmix64 state at `seed` and draws, per element, in order:
//   uniform real  u = (next() >> 11) * 2^-53  in [0, 1)
//   normal        Box-Muller from two uniforms (u1 in (0,1], u2), using both
//                 outputs (cos then sin) for consecutive elements
//   integer [a,b] a + (next() % (b - a + 1))   (bias < 2^-32 for our ranges)
// Values are computed in double, cast to float32 for float32/float16/bfloat16
// and then rounded to nearest-even for float16/bfloat16.
// Per-input seeds: input i of a call with seed S uses DeriveSeed(S, i).
//
// Thread-safety: pure functions.
#ifndef CRL_RUNNER_INPUTS_H_
#define CRL_RUNNER_INPUTS_H_

#include <cstdint>
#include <string>

namespace crl::runner {

// A parsed distribution (docs/task-format.md, "Distributions").
struct Distribution {
  enum Kind {
    kUniform,   // uniform(a, b): real in [a, b); integer dtypes: integer in [a, b]
    kNormal,    // normal(mu, sigma): float dtypes only
    kRandint,   // randint(a, b): integer in [a, b]; integer and bool dtypes
    kConstant,  // constant(c)
    kSparse,    // sparse(p, a, b): uniform real in [a, b) with probability p, else 0
  };
  Kind kind = kUniform;
  double a = 0;  // uniform/randint: low; normal: mu; constant: c; sparse: p
  double b = 1;  // uniform/randint: high; normal: sigma; sparse: low
  double c = 0;  // sparse: high
};

// Parses "uniform(-1, 1)", "normal(0,4)", "randint(0, 9)", "constant(2.5)",
// "sparse(0.1, -1, 1)". Whitespace is allowed around tokens; numbers are
// decimal/scientific (strtod, "C" locale independent: only [0-9+-.eE] are
// accepted), plus "inf"/"-inf" are rejected. Checks: uniform a < b (a <= b
// for integer use is checked by Generate), normal sigma >= 0, randint
// integral a <= b, sparse 0 <= p <= 1 and a < b.
bool ParseDistribution(const std::string& text, Distribution* dist,
                       std::string* error);

// Canonical text form of a distribution (round-trips through
// ParseDistribution; numbers printed with 17 significant digits).
std::string DistributionToString(const Distribution& dist);

// Checks that `dist` can generate `dtype` (normal needs a float dtype;
// randint needs integral bounds; integer ranges must fit the dtype; bool
// accepts only values in {0, 1}). False with *error otherwise.
bool CheckDistributionForDtype(const Distribution& dist, int32_t dtype,
                               std::string* error);

// Generates `numel` elements of `dtype` as raw little-endian bytes
// (numel * DtypeSize(dtype) bytes). Callers must have passed
// CheckDistributionForDtype; otherwise out-of-range values are clamped to the
// dtype's range. Returns an empty string for an unknown dtype or numel <= 0.
std::string Generate(const Distribution& dist, int32_t dtype, int64_t numel,
                     uint64_t seed);

// The seed of input `index` of a call seeded with `seed`:
// splitmix64 finalizer of (seed + 0x9E3779B97F4A7C15 * (index + 1)).
uint64_t DeriveSeed(uint64_t seed, uint64_t index);

// One splitmix64 step: advances *state and returns the next output.
uint64_t SplitMix64(uint64_t* state);

}  // namespace crl::runner

#endif  // CRL_RUNNER_INPUTS_H_
