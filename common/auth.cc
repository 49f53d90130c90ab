#include "common/auth.h"

#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/file.h"
#include "common/status.h"

namespace crl {

absl::StatusOr<std::string> ReadTokenFile(const std::string& path) {
  CRL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path, "token file"));
  std::string token(absl::StripAsciiWhitespace(text));
  if (token.empty()) return absl::InvalidArgumentError(absl::StrCat("token file ", path, " is empty"));
  return token;
}

grpc::Status Authenticator::Check(const grpc::ServerContextBase& context) const {
  if (!enabled()) return grpc::Status::OK;
  const auto& md = context.client_metadata();
  auto it = md.find("authorization");
  if (it == md.end()) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "missing authorization metadata");
  }
  std::string value(it->second.data(), it->second.size());
  const std::string expected = "Bearer " + token_;
  // Constant-time comparison over the expected length.
  unsigned diff = value.size() ^ expected.size();
  for (size_t i = 0; i < expected.size(); ++i) {
    diff |= static_cast<unsigned char>(expected[i]) ^
            static_cast<unsigned char>(i < value.size() ? value[i] : 0);
  }
  if (diff != 0) return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "invalid bearer token");
  return grpc::Status::OK;
}

}  // namespace crl
