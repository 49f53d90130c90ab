#include "common/grpc_status.h"

#include <string>

namespace crl {

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()));
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  int code = static_cast<int>(status.error_code());
  // 1..16 are the codes shared by both enums.
  absl::StatusCode absl_code = (code >= 1 && code <= 16)
                                   ? static_cast<absl::StatusCode>(code)
                                   : absl::StatusCode::kUnknown;
  return absl::Status(absl_code, status.error_message());
}

}  // namespace crl
