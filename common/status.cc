#include "common/status.h"

#include "absl/strings/str_cat.h"

namespace crl {

absl::Status Annotate(const absl::Status& status, absl::string_view context) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat(context, ": ", status.message()));
}

absl::Status StatusFromException(const std::exception& e, absl::StatusCode code) {
  return absl::Status(code, e.what());
}

}  // namespace crl
