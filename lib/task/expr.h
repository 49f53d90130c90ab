// Integer expressions over named sizes, as used by task manifests for shapes,
// flops and bytes: + - * / (integer division), parentheses, integer literals
// and size names. "(N+1)*D/2".
#ifndef CRL_LIB_TASK_EXPR_H_
#define CRL_LIB_TASK_EXPR_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace crl {

// Named sizes in manifest order.
using SizeSet = std::vector<std::pair<std::string, int64_t>>;

// Evaluates `text`. INVALID_ARGUMENT on a syntax error, an unknown name,
// division by zero or overflow, saying where.
absl::StatusOr<int64_t> EvalSizeExpr(const std::string& text, const SizeSet& sizes);

}  // namespace crl

#endif  // CRL_LIB_TASK_EXPR_H_
