// A fresh directory for one test, removed with everything in it when the
// object goes out of scope: the one temp-directory helper of the test tree.
//
//   crl::testing::TempDir dir("orch");          // $TMPDIR/crl-orch-XXXXXX
//   const std::string spec = dir.Write("a/spec.yaml", "name: x\n");
//   Open(dir.path() + "/db.sqlite");
#ifndef CRL_TESTS_SUPPORT_TEMP_DIR_H_
#define CRL_TESTS_SUPPORT_TEMP_DIR_H_

#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

namespace crl::testing {

class TempDir {
 public:
  // prefix names the directory (crl-<prefix>-XXXXXX), so a leftover says
  // which test left it.
  explicit TempDir(const std::string& prefix = "test") {
    std::string tmpl = (std::filesystem::temp_directory_path() / ("crl-" + prefix + "-XXXXXX")).string();
    if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("TempDir: mkdtemp failed for " + tmpl);
    // Readable by a sandboxed child that runs as another user.
    chmod(tmpl.c_str(), 0755);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }

  // Writes content to path()/rel, creating parent directories; returns the
  // file's path.
  std::string Write(const std::string& rel, const std::string& content = "# x\n") const {
    const std::filesystem::path p = std::filesystem::path(path_) / rel;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << content;
    return p.string();
  }

 private:
  std::string path_;
};

}  // namespace crl::testing

#endif  // CRL_TESTS_SUPPORT_TEMP_DIR_H_
