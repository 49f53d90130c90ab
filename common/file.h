// Whole-file reads for configuration inputs (tokens, PEM files, configs).
#ifndef CRL_COMMON_FILE_H_
#define CRL_COMMON_FILE_H_

#include <string>

#include "absl/status/statusor.h"

namespace crl {

// The bytes of `path`; NOT_FOUND "cannot read <what> <path>" when it cannot
// be opened.
absl::StatusOr<std::string> ReadFileToString(const std::string& path, const std::string& what);

}  // namespace crl

#endif  // CRL_COMMON_FILE_H_
