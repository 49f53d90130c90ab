#include "common/file.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace crl {

absl::StatusOr<std::string> ReadFileToString(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", what, " ", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace crl
