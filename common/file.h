// Whole-file reads and writes: configuration inputs (tokens, PEM files,
// configs), sources, caches and reports.
#ifndef CRL_COMMON_FILE_H_
#define CRL_COMMON_FILE_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace crl {

// The bytes of `path`; NOT_FOUND "cannot read <what> <path>" when it cannot
// be opened.
absl::StatusOr<std::string> ReadFileToString(const std::string& path, const std::string& what);

// Writes `data` to `path` (created or truncated); UNAVAILABLE naming the
// path when it cannot be written.
absl::Status WriteStringToFile(const std::string& path, const std::string& data);

// Writes `data` to a temporary file beside `path`, then renames it over
// `path`: readers see the old content or the new, never a part.
absl::Status WriteFileAtomically(const std::string& path, const std::string& data);
// WriteFileAtomically, and durable when it returns: the temporary file is
// flushed to disk before the rename, and the directory after it.
absl::Status WriteFileDurably(const std::string& path, const std::string& data);

}  // namespace crl

#endif  // CRL_COMMON_FILE_H_
