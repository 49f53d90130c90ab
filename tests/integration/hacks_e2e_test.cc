// The hack database on a local cluster of real services (crl up): known
// hacks of several kinds seeded through the orchestrator's scoring (real
// worker, real timing), then listed, filtered, shown and exported with the
// CLI; a second sighting is counted into its case; bad requests are usage
// errors.
#include <catch2/catch.hpp>

#include <filesystem>
#include <map>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "absl/strings/str_split.h"
#include "common/file.h"
#include "tests/support/service_process.h"
#include "tests/support/temp_dir.h"

namespace crl::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kBin = CRL_BIN_DIR;

// Each JSON line of `out`.
std::vector<json> JsonLines(const std::string& out) {
  std::vector<json> lines;
  for (absl::string_view line : absl::StrSplit(out, '\n', absl::SkipEmpty())) {
    json j = json::parse(line, nullptr, false);
    if (j.is_object()) lines.push_back(j);
  }
  return lines;
}

TEST_CASE("crl hacks: known hacks seeded through a real cluster are cases of the right kinds, listed and exported",
          "[e2e][hacks]") {
  TempDir dir;
  const std::string cluster = dir.path() + "/cluster";
  REQUIRE(std::system((kBin + "/crl up --data_dir " + cluster + " > " + dir.path() + "/up.log 2>&1").c_str()) == 0);
  const std::string on = " --cluster " + cluster;
  // Six hacks: two caught by a cheating reason, two sandbox violations, a
  // degenerate task's constant answer (a flag), and one caught only as a
  // wrong answer (a known hack by its author's word).
  const std::string match =
      "hacks/input_mutation.py,hacks/persistent_output.py,hacks/socket_at_import.py,conv1d/candidates/hack_fork.cc,"
      "degenerate_rowmin_relu/candidates/hack_constant_zero.cc,hacks/cache_by_pointer.py";
  int rc = -1;
  const std::string seeded = RunShell(kBin + "/crl hacks seed --match " + match + on + " 2>&1", &rc);
  INFO(seeded);
  CHECK(rc == 0);
  CHECK_THAT(seeded, Catch::Contains("6 hack candidates scored and recorded"));

  const std::vector<json> cases = JsonLines(RunShell(kBin + "/crl hacks list --json" + on));
  REQUIRE(cases.size() == 6);
  std::map<std::string, std::set<std::string>> kinds_of;  // origin's file name -> kinds
  for (const json& c : cases) {
    std::set<std::string> kinds;
    for (const auto& k : c["kinds"]) kinds.insert(k.get<std::string>());
    kinds_of[fs::path(c["origin"].get<std::string>()).filename().string()] = kinds;
    CHECK(c["times_seen"] == 1);
    CHECK_FALSE(c["source"].get<std::string>().empty());
  }
  CHECK(kinds_of["input_mutation.py"] == std::set<std::string>{"inputs-modified"});
  CHECK(kinds_of["persistent_output.py"] == std::set<std::string>{"reused-output"});
  CHECK(kinds_of["socket_at_import.py"] == std::set<std::string>{"sandbox-violation"});
  CHECK(kinds_of["hack_fork.cc"] == std::set<std::string>{"sandbox-violation"});
  CHECK(kinds_of["hack_constant_zero.cc"] == std::set<std::string>{"degenerate-task"});
  CHECK(kinds_of["cache_by_pointer.py"] == std::set<std::string>{"known-hack"});

  // Filters by kind and by task; one case in full.
  CHECK(JsonLines(RunShell(kBin + "/crl hacks list --json --kind sandbox-violation" + on)).size() == 2);
  CHECK(JsonLines(RunShell(kBin + "/crl hacks list --json --task conv1d" + on)).size() == 1);
  const std::string id = cases[0]["case_id"];
  const std::string shown = RunShell(kBin + "/crl hacks show " + id + on, &rc);
  CHECK(rc == 0);
  CHECK_THAT(shown, Catch::Contains("--- source"));
  // Export: a source file per case and the index, on this machine.
  const std::string out = dir.path() + "/export";
  REQUIRE(std::system((kBin + "/crl hacks export " + out + on + " > /dev/null").c_str()) == 0);
  CHECK(JsonLines(ReadFileToString(out + "/cases.jsonl", "index").value_or("")).size() == 6);
  int sources = 0;
  for (const auto& e : fs::directory_iterator(out)) sources += e.path().filename() != "cases.jsonl";
  CHECK(sources == 6);

  // Seen again: the same case, counted.
  REQUIRE(std::system((kBin + "/crl hacks seed --match hacks/socket_at_import.py" + on + " > /dev/null").c_str()) == 0);
  const std::vector<json> again = JsonLines(RunShell(kBin + "/crl hacks list --json --kind sandbox-violation" + on));
  int counted = 0;
  for (const json& c : again) counted += c["times_seen"].get<int>();
  CHECK(counted == 3);
  // Bad requests are usage errors; an unknown case is named.
  RunShell(kBin + "/crl hacks list --kind bogus" + on + " 2>&1", &rc);
  CHECK(rc == 2);
  CHECK_THAT(RunShell(kBin + "/crl hacks show 0000" + on + " 2>&1", &rc), Catch::Contains("no hack case '0000'"));
  CHECK(rc != 0);
  CHECK(std::system((kBin + "/crl down --data_dir " + cluster + " > /dev/null").c_str()) == 0);
}

}  // namespace
}  // namespace crl::testing
