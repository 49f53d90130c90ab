// Element-wise comparison of a candidate's output with the reference's, by
// dtype, with the checks of the correctness protocol: unwritten (still
// poisoned) elements, NaN/Inf, tolerance, exact size.
#ifndef CRL_SERVICES_WORKER_VERIFY_COMPARE_H_
#define CRL_SERVICES_WORKER_VERIFY_COMPARE_H_

#include <cstdint>
#include <string>

#include "runner/protocol.h"
#include "lib/task/backend.h"

namespace crl {

struct CompareResult {
  enum Kind {
    kMatch,
    kSizeMismatch,  // wrong number of bytes
    kUnwritten,     // an element still holds the runner's poison pattern
    kNonFinite,     // NaN/Inf where the reference is finite
    kMismatch,      // outside tolerance
  };
  Kind kind = kMatch;
  int64_t mismatches = 0;        // elements outside tolerance (kMismatch/kNonFinite/kUnwritten)
  int64_t numeric_mismatches = 0;  // of them, finite values (both sides) outside the tolerance
  int64_t first_index = -1;      // first failing element
  double max_abs_error = 0;      // over finite elements
  double max_rel_error = 0;
  std::string detail;            // one line for people
};

// Compares `got` with `want` for a tensor of `spec`. |got - want| <= atol +
// rtol * |want| passes. Integer and bool dtypes compare exactly. A NaN in the
// reference must be matched by a NaN.
CompareResult CompareTensor(const runner::TensorSpec& spec, const std::string& got,
                            const std::string& want, Tolerance tolerance);

// Whether CompareTensor would answer kMatch, stopping at the first element
// that fails: for yes/no questions whose answer is mostly no (degenerate-
// task probes). `got_constant`: `got` is one element standing for every
// element of `spec` (OutputTensor::constant).
bool TensorWithin(const runner::TensorSpec& spec, const std::string& got, const std::string& want,
                  Tolerance tolerance, bool got_constant = false);

// How a verified candidate stands to a trivial solution (a degenerate-task
// probe: zeros, the mean, the input, another input's output) that passes the
// task's tolerance too. L2 norms over the elements, in double.
struct ProbeDistances {
  bool valid = false;          // sizes agree and every element is finite
  double candidate = 0;        // ||got - want||
  double probe = 0;            // ||probe - want||: the reference's own distance from the trivial
  double candidate_probe = 0;  // ||got - probe||
  double reference = 0;        // ||want||
  // max_i |probe_i - want_i| / (atol + rtol |want_i|): how much of the
  // tolerance the trivial solution's error uses (at most 1 when it passes).
  double probe_share_of_tolerance = 0;
};
// `probe_constant`: `probe` is one element standing for every element.
ProbeDistances MeasureProbe(const runner::TensorSpec& spec, const std::string& got, const std::string& want,
                            const std::string& probe, bool probe_constant, Tolerance tolerance);

}  // namespace crl

#endif  // CRL_SERVICES_WORKER_VERIFY_COMPARE_H_
