// Status helpers shared by every crl component (no gRPC here: the bridge to
// grpc::Status is common/grpc_status.h, for the edges).
//
// Debian's Abseil (20220623) has neither ABSL_RETURN_IF_ERROR nor
// ASSIGN_OR_RETURN, so the two macros live here, once.
#ifndef CRL_COMMON_STATUS_H_
#define CRL_COMMON_STATUS_H_

#include <exception>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace crl {

// Prefixes a status message with context ("loading task foo: ...").
absl::Status Annotate(const absl::Status& status, absl::string_view context);

// For catch blocks at the edge of libraries that throw (yaml-cpp,
// nlohmann-json, LibTorch): what() becomes the message.
absl::Status StatusFromException(const std::exception& e,
                                 absl::StatusCode code = absl::StatusCode::kInternal);

}  // namespace crl

#define CRL_STATUS_CONCAT_INNER_(a, b) a##b
#define CRL_STATUS_CONCAT_(a, b) CRL_STATUS_CONCAT_INNER_(a, b)

// Evaluates `expr` (an absl::Status); returns it from the enclosing function
// if it is not OK.
#define CRL_RETURN_IF_ERROR(expr)                      \
  do {                                                 \
    ::absl::Status crl_status_ = (expr);               \
    if (!crl_status_.ok()) return crl_status_;         \
  } while (0)

// `CRL_ASSIGN_OR_RETURN(auto x, F());` evaluates F() (an absl::StatusOr<T>);
// on error returns its status, otherwise moves the value into `lhs`.
#define CRL_ASSIGN_OR_RETURN(lhs, expr) \
  CRL_ASSIGN_OR_RETURN_IMPL_(CRL_STATUS_CONCAT_(crl_statusor_, __LINE__), lhs, expr)
#define CRL_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                               \
  if (!statusor.ok()) return std::move(statusor).status(); \
  lhs = std::move(statusor).value()

#endif  // CRL_COMMON_STATUS_H_
