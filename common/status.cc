#include "common/status.h"

#include "absl/strings/str_cat.h"

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

absl::Status Annotate(const absl::Status& status, absl::string_view context) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat(context, ": ", status.message()));
}

absl::Status StatusFromException(const std::exception& e, absl::StatusCode code) {
  return absl::Status(code, e.what());
}

}  // namespace crl
