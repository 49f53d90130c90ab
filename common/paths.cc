#include "common/paths.h"

#include <filesystem>

#ifndef CRL_SOURCE_DIR
#define CRL_SOURCE_DIR ""
#endif

namespace crl {

namespace fs = std::filesystem;

std::string ExecutableDir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : exe.parent_path().string();
}

std::string FindShippedDir(const std::string& relative) {
  const fs::path exe_dir = ExecutableDir();
  for (fs::path base : {exe_dir / "..", exe_dir / ".." / "..", exe_dir / ".." / "share" / "crl",
                        fs::path(CRL_SOURCE_DIR)}) {
    if (base.empty()) continue;
    std::error_code ec;
    if (fs::is_directory(base / relative, ec)) return fs::weakly_canonical(base / relative).string();
  }
  return "";
}

}  // namespace crl
