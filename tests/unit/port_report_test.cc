// crl port-report's comparison (lib/report/port.h): both crl bench layouts
// read with their provenance, candidates matched by key, ratios against the
// first machine, candidates that stop being correct or lose their speedup,
// per-machine means over trusted speedups only, and the files written.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "common/file.h"
#include "lib/report/port.h"

namespace crl::report {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string Write(const std::string& dir, const std::string& name, const json& j) {
  const std::string path = dir + "/" + name;
  REQUIRE(WriteStringToFile(path, j.dump()).ok());
  return path;
}

json Row(int level, int task, const std::string& status, json speedup, json flags = json::array()) {
  return {{"level_id", level}, {"task_id", task}, {"status", status}, {"speedup", speedup}, {"flags", flags}};
}

TEST_CASE("port report: the same candidates on two machines, ratios, lost correctness and speedups", "[report]") {
  const std::string dir = (fs::temp_directory_path() / ("crl-port-" + std::to_string(::getpid()))).string();
  fs::create_directories(dir);
  // Machine A (CUDA-L1 rows): four candidates.
  const std::string a = Write(dir, "a.json",
                              {{"config", {{"provenance", {{"gpu", "NVIDIA H100"}, {"driver", "580"},
                                                           {"cuda", "13.0"}, {"torch", "2.11"}}}}},
                               {"rows", {Row(1, 1, "OK", 2.0), Row(1, 2, "OK", 4.0), Row(2, 3, "OK", 1.5),
                                         Row(2, 4, "OK", 8.0, {"SIDE_STREAM"})}}});
  // Machine B: 1/1 slower, 1/2 wrong, 2/3 loses its speedup, 2/4 trusted here.
  const std::string b = Write(dir, "b.json",
                              {{"rows", {Row(1, 1, "OK", 1.0), Row(1, 2, "WRONG_ANSWER", nullptr),
                                         Row(2, 3, "OK", 0.9), Row(2, 4, "OK", 3.0, {"NO_CUSTOM_KERNEL"})}}});
  auto sa = ReadPortSet(a);
  auto sb = ReadPortSet(b);
  REQUIRE(sa.ok());
  REQUIRE(sb.ok());
  CHECK(sa->label == "NVIDIA H100 (a)");
  CHECK(sb->label == "b");  // no provenance: the file's name
  CHECK_FALSE(sa->results.at("L2/4").speedup.has_value());  // flagged: not trusted
  CHECK(sb->results.at("L2/4").speedup == 3.0);              // a label is no trust flag
  auto r = ComparePorts({*sa, *sb});
  REQUIRE(r.ok());
  REQUIRE(r->rows.size() == 4);
  CHECK(r->rows[0].key == "L1/1");
  CHECK(*r->rows[0].ratio[1] == Approx(0.5));
  CHECK_FALSE(r->rows[0].stops_correct[1]);
  CHECK(r->rows[0].loses_speedup[1]);  // 2x there, 1x here
  CHECK(r->rows[1].stops_correct[1]);
  CHECK(r->rows[1].loses_speedup[1]);
  CHECK(r->rows[2].loses_speedup[1]);
  CHECK_FALSE(r->rows[3].loses_speedup[1]);  // never trusted on the first
  CHECK_FALSE(r->rows[3].ratio[1].has_value());
  const PortMachine& ma = r->machines[0];
  CHECK(ma.trusted == 3);
  CHECK(ma.mean == Approx(2.5));
  CHECK(ma.median == Approx(2.0));
  CHECK(ma.geomean == Approx(std::cbrt(2.0 * 4.0 * 1.5)));
  CHECK(ma.common == 2);  // L1/1 and L2/3: trusted on both
  CHECK(r->machines[1].correct == 3);
  CHECK(r->machines[1].common_mean == Approx(0.95));

  // The KernelBench layout reads too; one set alone is refused; junk names the file.
  const std::string kb = Write(dir, "kb.json", {{"level1", {{"1", {{"0", {{"verdict", "OK"}, {"speedup", 1.2}}}}}}}});
  auto skb = ReadPortSet(kb);
  REQUIRE(skb.ok());
  CHECK(skb->results.at("L1/1/0").speedup == 1.2);
  CHECK_FALSE(ComparePorts({*sa}).ok());
  const std::string junk = Write(dir, "junk.json", {{"nothing", 1}});
  auto bad = ReadPortSet(junk);
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(std::string(bad.status().message()), Catch::Contains("junk.json"));

  auto files = WritePortReport(*r, {*sa, *sb}, dir + "/out");
  REQUIRE(files.ok());
  CHECK(files->size() == 3);
  auto html = ReadFileToString(dir + "/out/report.html", "html");
  REQUIRE(html.ok());
  CHECK_THAT(*html, Catch::Contains("b: stops being correct") && Catch::Contains("NVIDIA H100") &&
                        Catch::Contains("data:image/png;base64,"));
  auto j = json::parse(*ReadFileToString(dir + "/out/report.json", "json"));
  CHECK(j["machines"][0]["provenance"]["torch"] == "2.11");
  CHECK(j["rows"][1]["on"][1]["stops_correct"] == true);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace crl::report
