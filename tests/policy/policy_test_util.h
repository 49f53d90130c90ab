// Helpers of the policy tests: temporary directories and the Python
// reference (Debian's python3-torch; CRL_TEST_PYTHON overrides).
#ifndef CRL_TESTS_POLICY_POLICY_TEST_UTIL_H_
#define CRL_TESTS_POLICY_POLICY_TEST_UTIL_H_

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "common/file.h"

namespace crl::policy {

class TempDir {
 public:
  TempDir() {
    static int counter = 0;
    path_ = (std::filesystem::temp_directory_path() /
             absl::StrCat("crl-policy-test-", getpid(), "-", counter++))
                .string();
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline std::string Python() {
  const char* p = std::getenv("CRL_TEST_PYTHON");
  return p ? p : "/usr/bin/python3";
}

// Runs tests/policy/reference_model.py on `model_dir` with `input`.
inline absl::StatusOr<nlohmann::json> RunReference(const std::string& model_dir,
                                                   const nlohmann::json& input) {
  TempDir io;
  const std::string in = io.path() + "/in.json", out = io.path() + "/out.json";
  if (!WriteStringToFile(in, input.dump()).ok()) return absl::InternalError("cannot write input");
  const std::string cmd = absl::StrCat(Python(), " ", CRL_SOURCE_DIR,
                                       "/tests/policy/reference_model.py ", model_dir, " ", in,
                                       " ", out, " 2>&1");
  if (std::system(cmd.c_str()) != 0) return absl::InternalError("the reference failed: " + cmd);
  auto text = ReadFileToString(out, "reference output");
  if (!text.ok()) return text.status();
  return nlohmann::json::parse(*text);
}

}  // namespace crl::policy

#endif  // CRL_TESTS_POLICY_POLICY_TEST_UTIL_H_
