// The one bridge between absl::Status (logic) and grpc::Status (edges). It is
// lossless for code and message: absl::StatusCode and grpc::StatusCode use
// the same numbering (both follow google.rpc.Code). Only gRPC edges and
// clients include this.
#ifndef CRL_COMMON_GRPC_STATUS_H_
#define CRL_COMMON_GRPC_STATUS_H_

#include <grpcpp/support/status.h>

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace crl {

// Converts code and message without loss. Payloads are not carried.
grpc::Status ToGrpcStatus(const absl::Status& status);
// Inverse of ToGrpcStatus. Codes outside the known range become UNKNOWN.
absl::Status FromGrpcStatus(const grpc::Status& status);

// For gRPC edges: moves an OK result into `*response`, or returns the error
// as a grpc::Status.
template <typename T>
grpc::Status FillResponse(absl::StatusOr<T> result, T* response) {
  if (!result.ok()) return ToGrpcStatus(result.status());
  *response = std::move(*result);
  return grpc::Status::OK;
}

}  // namespace crl

#endif  // CRL_COMMON_GRPC_STATUS_H_
