// lib/run/task_files: a spec parsed with the files a client sent
// (ParseRunSpec), as the Python client sends them.
#include "lib/run/task_files.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>

#include "tests/support/temp_dir.h"

namespace crl::run {
namespace {

using crl::testing::TempDir;
namespace fs = std::filesystem;

v1::File* Add(v1::ParseRunSpecRequest* r, const std::string& path, const std::string& content) {
  v1::File* f = r->add_files();
  f->set_path(path);
  f->set_content(content);
  return f;
}

// A native task the way a researcher's folder holds it: task.yaml, the
// reference, and candidates/ with expect.yaml (what `sft_examples: shipped` reads).
void AddNativeTask(v1::ParseRunSpecRequest* r, const std::string& dir) {
  const std::string shipped = std::string(CRL_SOURCE_DIR) + "/tasks/native/row_sum";
  for (const char* name : {"task.yaml", "reference.cc", "candidates/expect.yaml", "candidates/fast_correct.cc",
                           "candidates/slow_correct.cc"}) {
    std::string content;
    std::ifstream in(shipped + "/" + name, std::ios::binary);
    content.assign(std::istreambuf_iterator<char>(in), {});
    REQUIRE_FALSE(content.empty());
    Add(r, dir + "/" + name, content);
  }
}

TEST_CASE("a sent spec resolves its relative tasks among the sent files and comes back inline", "[run][spec]") {
  TempDir scratch("scratch");
  v1::ParseRunSpecRequest r;
  r.set_file_name("study/spec.yaml");
  r.set_text("name: s\ntasks: [../tasks/row_sum, kb/01_Add.py]\nsft_examples: shipped\nstages: [{kind: sft}]\n");
  AddNativeTask(&r, "../tasks/row_sum");
  Add(&r, "kb/01_Add.py", "import torch\nclass Model(torch.nn.Module):\n    pass\n");
  auto spec = ParseSentSpec(r, scratch.path());
  REQUIRE(spec.ok());
  REQUIRE(spec->tasks_size() == 2);
  const v1::Task& native = spec->tasks(0);
  CHECK(native.name() == "row_sum");
  CHECK(native.path().empty());
  CHECK(native.format() == v1::TASK_FORMAT_NATIVE);
  std::set<std::string> files;
  for (const auto& f : native.files()) files.insert(f.path());
  CHECK(files == std::set<std::string>{"reference.cc", "task.yaml"});  // top-level files, as `crl run submit` sends
  CHECK(spec->tasks(1).name() == "01_Add");
  CHECK(spec->tasks(1).files_size() == 1);
  // The shipped examples came from the sent candidates/, named as sent.
  REQUIRE(spec->sft_examples_size() >= 1);
  CHECK(spec->sft_examples(0).origin().rfind("../tasks/row_sum/candidates/", 0) == 0);
  // Nothing is left behind.
  CHECK(fs::is_empty(scratch.path()));
}

TEST_CASE("a sent spec's errors name paths as the client sent them; bad file paths are refused", "[run][spec]") {
  TempDir scratch("scratch");
  v1::ParseRunSpecRequest r;
  r.set_file_name("spec.yaml");
  r.set_text("tasks: [../tasks/missing]\n");
  auto missing = ParseSentSpec(r, scratch.path());
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(missing.status().message()), Catch::Contains("spec.yaml") && Catch::Contains("does not exist"));
  CHECK_THAT(std::string(missing.status().message()), !Catch::Contains(scratch.path()));

  r.set_text("tasks: [a.py]\n");
  for (const char* bad : {"/etc/passwd", "a/../../b.py", "", "..", "./"}) {
    v1::ParseRunSpecRequest with = r;
    Add(&with, bad, "x");
    auto refused = ParseSentSpec(with, scratch.path());
    INFO(bad);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(std::string(refused.status().message()), Catch::StartsWith("files:"));
  }
  v1::ParseRunSpecRequest big = r;
  Add(&big, "a.py", std::string(kMaxInlineTaskBytes + 1, 'x'));
  auto too_big = ParseSentSpec(big, scratch.path());
  REQUIRE_FALSE(too_big.ok());
  CHECK_THAT(std::string(too_big.status().message()), Catch::Contains("MiB"));
  CHECK(fs::is_empty(scratch.path()));
}

}  // namespace
}  // namespace crl::run
