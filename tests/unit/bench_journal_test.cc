// crl bench's journal (services/cli/bench_journal.h).
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/file.h"
#include "services/cli/bench_journal.h"

namespace crl::cli {
namespace {

namespace fs = std::filesystem;

std::string TempPath() {
  static int n = 0;
  return (fs::temp_directory_path() / ("crl-journal-" + std::to_string(getpid()) + "-" + std::to_string(n++))).string();
}

}  // namespace

TEST_CASE("the bench journal: outcomes survive the process, a torn tail is dropped, keys follow content",
          "[bench_journal]") {
  const std::string path = TempPath();
  const std::string a = BenchJournal::Key("settings", "task", "code a");
  const std::string b = BenchJournal::Key("settings", "task", "code b");
  CHECK(a != b);
  CHECK(BenchJournal::Key("other settings", "task", "code a") != a);
  CHECK(BenchJournal::Key("settings", "task2", "code a") != a);
  // Lengths are part of the key: moving a character across a boundary is
  // another sample.
  CHECK(BenchJournal::Key("ab", "c", "d") != BenchJournal::Key("a", "bc", "d"));
  {
    auto j = BenchJournal::Open(path);
    REQUIRE(j.ok());
    CHECK((*j)->size() == 0);
    REQUIRE((*j)->Append(a, {{"verdict", "VERDICT_OK"}}).ok());
    REQUIRE((*j)->Append(b, {{"verdict", "VERDICT_WRONG_ANSWER"}}).ok());
  }
  // A process killed mid-write leaves a torn last line: ignored, and cut
  // off so the next append starts a line of its own.
  { std::ofstream(path, std::ios::app) << "{\"key\": \"c\", \"outco"; }
  {
    auto j = BenchJournal::Open(path);
    REQUIRE(j.ok());
    CHECK((*j)->size() == 2);
    REQUIRE((*j)->Find(a).has_value());
    CHECK((*(*j)->Find(a))["verdict"] == "VERDICT_OK");
    CHECK_FALSE((*j)->Find("c").has_value());
    REQUIRE((*j)->Append("c", {{"verdict", "VERDICT_OK"}}).ok());
  }
  auto again = BenchJournal::Open(path);
  REQUIRE(again.ok());
  CHECK((*again)->size() == 3);
  REQUIRE((*again)->Remove().ok());
  CHECK_FALSE(fs::exists(path));

  // Anything but a torn tail is not guessed at.
  { std::ofstream(path) << "not json\n{\"key\": \"x\", \"outcome\": {}}\n"; }
  auto bad = BenchJournal::Open(path);
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(std::string(bad.status().message()), Catch::Contains(path + ":1: not a journal line"));
  fs::remove(path);
}

}  // namespace crl::cli
