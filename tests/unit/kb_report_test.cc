#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "lib/kernelbench/baseline.h"
#include "lib/kernelbench/cuda_l1.h"
#include "lib/kernelbench/files.h"
#include "lib/kernelbench/results.h"
#include "lib/reward/names.h"
#include "tests/support/temp_dir.h"

namespace crl::kb {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A fresh directory under the system temp dir, removed at scope exit.
using crl::testing::TempDir;  // tests/support/temp_dir.h

SampleResult Sample(int problem, int sample, const std::string& verdict, double speedup,
                    std::vector<std::string> flags = {}, int level = 1) {
  SampleResult r;
  r.level = level;
  r.problem = problem;
  r.sample = sample;
  r.evaluated = true;
  r.verdict = verdict;
  r.compiled = verdict != "COMPILE_ERROR";
  r.correct = verdict == "OK";
  r.speedup = speedup;
  if (speedup > 0) {
    r.ref_ms = 2.0;
    r.candidate_ms = 2.0 / speedup;
    r.speedup_ci_low = speedup * 0.95;
    r.speedup_ci_high = speedup * 1.05;
  }
  r.flags = std::move(flags);
  r.custom_kernel = true;
  return r;
}

SampleResult Infra(int problem, int sample, int level = 1) {
  SampleResult r;
  r.level = level;
  r.problem = problem;
  r.sample = sample;
  r.evaluated = false;
  r.verdict = "INFRA_ERROR";
  r.message = "worker lost";
  return r;
}

std::set<std::string> Keys(const json& j) {
  std::set<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.insert(k);
  return keys;
}

TEST_CASE("fast_p counts strictly faster correct tasks over all tasks", "[kb]") {
  // Four tasks: 2.0x correct, 0.9x correct, wrong, and one with no generation.
  std::vector<SampleResult> results = {Sample(1, 0, "OK", 2.0), Sample(2, 0, "OK", 0.9),
                                       Sample(3, 0, "WRONG_ANSWER", 0)};
  LevelSummary s = SummarizeLevel(1, 4, results);
  CHECK(s.level == 1);
  CHECK(s.tasks == 4);
  CHECK(s.attempted == 3);
  CHECK(s.correct == 2);
  CHECK(s.flagged == 0);
  CHECK(s.infra_errors == 0);
  REQUIRE(s.fast_p.size() == 6);
  CHECK(s.fast_p.at("fast_0") == 0.5);
  CHECK(s.fast_p.at("fast_0.5") == 0.5);
  CHECK(s.fast_p.at("fast_0.8") == 0.5);
  CHECK(s.fast_p.at("fast_1") == 0.25);
  CHECK(s.fast_p.at("fast_1.5") == 0.25);
  CHECK(s.fast_p.at("fast_2") == 0);  // 2.0x is not strictly greater than 2
  CHECK(s.geomean_speedup == Approx(std::sqrt(1.8)));
  CHECK(s.median_speedup == Approx(1.45));
}

TEST_CASE("fast_p keys and trust flags", "[kb]") {
  CHECK(FastPKey(0) == "fast_0");
  CHECK(FastPKey(0.5) == "fast_0.5");
  CHECK(FastPKey(0.8) == "fast_0.8");
  CHECK(FastPKey(1) == "fast_1");
  CHECK(FastPKey(1.5) == "fast_1.5");
  CHECK(FastPThresholds() == std::vector<double>{0, 0.5, 0.8, 1, 1.5, 2});
  CHECK(crl::IsTrustFlagName("SIDE_STREAM"));
  CHECK(crl::IsTrustFlagName("FLAG_NOISY"));
  CHECK_FALSE(crl::IsTrustFlagName("NO_CUSTOM_KERNEL"));
  CHECK_FALSE(crl::IsTrustFlagName("FLAG_NO_CUSTOM_KERNEL"));
  CHECK_FALSE(crl::IsTrustFlagName(""));
}

TEST_CASE("the best sample per task is correct and unflagged first, then fastest", "[kb]") {
  std::vector<SampleResult> results = {
      // Problem 1: the flagged 3.0x must lose to the trusted 1.2x.
      Sample(1, 0, "WRONG_ANSWER", 0), Sample(1, 1, "OK", 1.2), Sample(1, 2, "OK", 3.0, {"SIDE_STREAM"}),
      Sample(1, 3, "OK", 1.1),
      // Problem 2: only a flagged correct sample and a wrong one.
      Sample(2, 0, "WRONG_ANSWER", 0), Sample(2, 1, "OK", 5.0, {"FLAG_BELOW_PHYSICAL_FLOOR"}),
      // Problem 3: NO_CUSTOM_KERNEL is a label, not a suspicion; its speed counts.
      Sample(3, 0, "OK", 1.6, {"NO_CUSTOM_KERNEL"}),
      // Problem 4: two wrong samples; the tie goes to the lower sample number.
      Sample(4, 1, "RUNTIME_ERROR", 0), Sample(4, 0, "WRONG_ANSWER", 0),
      // Another level: ignored.
      Sample(1, 0, "OK", 9.0, {}, 2)};
  auto best = BestSamples(1, results);
  REQUIRE(best.size() == 4);
  CHECK(best.at(1).sample == 1);
  CHECK(best.at(2).sample == 1);
  CHECK(best.at(3).sample == 0);
  CHECK(best.at(4).sample == 0);

  LevelSummary s = SummarizeLevel(1, 4, results);
  CHECK(s.correct == 3);
  CHECK(s.flagged == 1);
  CHECK(s.fast_p.at("fast_0") == 0.5);   // problems 1 and 3
  CHECK(s.fast_p.at("fast_1.5") == 0.25);  // problem 3 only; the flagged 5.0x is not fast
  CHECK(s.fast_p.at("fast_2") == 0);
  CHECK(s.geomean_speedup == Approx(std::sqrt(1.2 * 1.6)));
  CHECK(s.median_speedup == Approx(1.4));
}

TEST_CASE("a correct but untimed sample is correct and never fast", "[kb]") {
  LevelSummary s = SummarizeLevel(1, 2, {Sample(1, 0, "OK", 0), Sample(2, 0, "OK", 1.5)});
  CHECK(s.correct == 2);
  CHECK(s.fast_p.at("fast_0") == 0.5);
  CHECK(s.geomean_speedup == Approx(1.5));
}

TEST_CASE("infra failures are unsolved but counted apart from wrong answers", "[kb]") {
  SampleResult infra_verdict = Sample(3, 0, "INFRA_ERROR", 0);  // evaluated flag set, verdict says infra
  std::vector<SampleResult> results = {Infra(1, 0), Infra(1, 1), Sample(2, 0, "WRONG_ANSWER", 0),
                                       Infra(2, 1), infra_verdict, Sample(4, 0, "OK", 1.3)};
  CHECK(IsInfra(infra_verdict));
  CHECK_FALSE(IsCorrect(infra_verdict));
  LevelSummary s = SummarizeLevel(1, 5, results);
  CHECK(s.tasks == 5);
  CHECK(s.attempted == 4);
  CHECK(s.correct == 1);
  CHECK(s.infra_errors == 2);   // problems 1 and 3 had nothing but infra failures
  CHECK(s.infra_samples == 4);  // all four samples to re-run
  CHECK(s.fast_p.at("fast_1") == Approx(0.2));
  // An evaluated sample beats an infra failure for the same task.
  CHECK(BestSamples(1, results).at(2).verdict == "WRONG_ANSWER");
}

TEST_CASE("a result for an unlisted task never pushes fast_p above one", "[kb]") {
  LevelSummary s = SummarizeLevel(1, 1, {Sample(1, 0, "OK", 2.5), Sample(7, 0, "OK", 2.5)});
  CHECK(s.tasks == 2);
  CHECK(s.fast_p.at("fast_2") == 1.0);
  LevelSummary none = SummarizeLevel(3, 0, {});
  CHECK(none.tasks == 0);
  CHECK(none.fast_p.at("fast_0") == 0);
  CHECK(none.geomean_speedup == 0);
}

TEST_CASE("summaries per level follow the task list", "[kb]") {
  std::vector<TaskFile> tasks = {{1, 1, "1_A.py", ""}, {1, 2, "2_B.py", ""}, {2, 1, "1_C.py", ""}};
  CHECK(TasksPerLevel(tasks) == std::map<int, int>{{1, 2}, {2, 1}});
  auto all = SummarizeLevels(tasks, {Sample(1, 0, "OK", 1.5), Sample(1, 0, "OK", 3, {}, 3)});
  REQUIRE(all.size() == 3);
  CHECK(all[0].level == 1);
  CHECK(all[0].fast_p.at("fast_1") == 0.5);
  CHECK(all[1].level == 2);
  CHECK(all[1].attempted == 0);
  CHECK(all[2].level == 3);  // only in results
  CHECK(all[2].tasks == 1);
}

TEST_CASE("the table has one aligned row per level with the numbers", "[kb]") {
  LevelSummary a = SummarizeLevel(
      1, 4, {Sample(1, 0, "OK", 2.0), Sample(2, 0, "OK", 0.9), Sample(3, 0, "WRONG_ANSWER", 0)});
  LevelSummary b = SummarizeLevel(2, 10, {Sample(1, 0, "OK", 1.7, {"NOISY"}, 2), Infra(2, 0, 2)});
  std::string table = RenderTable({a, b});
  INFO(table);
  std::vector<std::string> lines;
  std::istringstream in(table);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  REQUIRE(lines.size() == 3);
  CHECK(lines[0].find("level") != std::string::npos);
  for (const char* h : {"tasks", "correct", "fast_0", "fast_0.5", "fast_0.8", "fast_1", "fast_1.5",
                        "fast_2", "geomean", "median", "flagged", "infra"}) {
    CHECK(lines[0].find(h) != std::string::npos);
  }
  CHECK(lines[1].size() == lines[0].size());
  CHECK(lines[2].size() == lines[0].size());
  CHECK(lines[1].find("0.500") != std::string::npos);
  CHECK(lines[1].find("0.250") != std::string::npos);
  CHECK(lines[1].find("1.342") != std::string::npos);  // geomean sqrt(1.8)
  CHECK(lines[1].find("1.450") != std::string::npos);  // median
  // Level 2: ten tasks, one correct but flagged, one infra.
  CHECK(lines[2].rfind("    2", 0) == 0);
  CHECK(lines[2].find(" 10 ") != std::string::npos);
  CHECK(lines[2].substr(lines[2].size() - 1) == "1");
}

TEST_CASE("results JSON has the KernelBench layout", "[kb]") {
  std::vector<SampleResult> results = {Sample(1, 0, "OK", 2.0), Sample(1, 1, "WRONG_ANSWER", 0),
                                       Infra(2, 0)};
  results[1].message = "output y differs at 17";
  results[0].compile_seconds = 8.0;
  results[1].compile_seconds = 0.5;
  results[1].compile_cache_hit = true;
  auto summaries = SummarizeLevels({{1, 1, "1_A.py", ""}, {1, 2, "2_B.py", ""}, {2, 1, "1_C.py", ""}},
                                   results);
  json j = ResultsJson({{"run_name", "t"}, {"k", 2}}, results, summaries);
  CHECK(Keys(j) == std::set<std::string>{"config", "summary", "level1", "level2", "builds"});
  CHECK(j["builds"]["cold"]["count"] == 1);
  CHECK(j["builds"]["cold"]["median_s"] == 8.0);
  CHECK(j["builds"]["cached"]["count"] == 1);  // the infra sample never reached the compiler
  CHECK(j["builds"]["cached"]["max_s"] == 0.5);
  CHECK(j["config"]["run_name"] == "t");
  CHECK(j["summary"]["level1"]["fast_1"] == 0.5);
  CHECK(j["summary"]["level1"]["tasks"] == 2);
  CHECK(j["summary"]["level1"]["geomean_speedup"] == Approx(2.0));
  CHECK(j["summary"]["level2"]["attempted"] == 0);
  CHECK(j["level2"].is_object());
  CHECK(j["level2"].empty());  // summarized, nothing ran

  const json& ok = j["level1"]["1"]["0"];
  CHECK(Keys(ok) == std::set<std::string>{"compiled", "correctness", "runtime", "ref_runtime", "speedup",
                                          "speedup_ci", "verdict", "flags", "custom_kernel", "metadata"});
  CHECK(ok["compiled"] == true);
  CHECK(ok["correctness"] == true);
  CHECK(ok["runtime"] == Approx(1.0));
  CHECK(ok["ref_runtime"] == Approx(2.0));
  CHECK(ok["speedup"] == 2.0);
  CHECK(ok["speedup_ci"] == json::array({1.9, 2.1}));
  CHECK(ok["verdict"] == "OK");
  CHECK(ok["flags"] == json::array());
  CHECK(ok["custom_kernel"] == true);
  CHECK(ok["metadata"]["compile_seconds"] == 8.0);
  CHECK(ok["metadata"]["compile_cache_hit"] == false);

  const json& wrong = j["level1"]["1"]["1"];
  CHECK(wrong["correctness"] == false);
  CHECK(wrong["runtime"] == -1.0);
  CHECK(wrong["speedup"].is_null());
  CHECK(wrong["speedup_ci"].is_null());
  CHECK(wrong["metadata"]["message"] == "output y differs at 17");
  // Infra() is level 1 problem 2.
  CHECK(j["level1"]["2"]["0"]["verdict"] == "INFRA_ERROR");
  CHECK(j["level1"]["2"]["0"]["metadata"]["evaluated"] == false);
}

TEST_CASE("baseline round-trips through JSON on disk", "[kb]") {
  TempDir dir;
  Baseline b;
  b["level1"]["1_Square_matmul.py"] = {1.25, 0.01, 1.2, 1.4, 100, "H100", "cuda:0"};
  b["level1"]["2_Relu.py"] = BaselineFromSamples({0.1, 0.2, 0.3}, "H100", "cuda:0");
  b["level2"]["1_Conv_ReLU.py"] = {3.5, 0, 3.5, 3.5, 1, "", ""};
  std::string path = dir.Write("baseline.json", BaselineJson(b).dump(2));
  auto read = ReadBaseline(path);
  INFO(read.status());
  REQUIRE(read.ok());
  REQUIRE(read->size() == 2);
  const BaselineEntry* e = FindBaseline(*read, 1, "1_Square_matmul.py");
  REQUIRE(e != nullptr);
  CHECK(e->mean == 1.25);
  CHECK(e->std == 0.01);
  CHECK(e->min == 1.2);
  CHECK(e->max == 1.4);
  CHECK(e->num_trials == 100);
  CHECK(e->hardware == "H100");
  CHECK(e->device == "cuda:0");
  CHECK(FindBaseline(*read, 2, "1_Conv_ReLU.py")->mean == 3.5);
  CHECK(FindBaseline(*read, 1, "9_Missing.py") == nullptr);
  CHECK(FindBaseline(*read, 3, "1_Square_matmul.py") == nullptr);
  CHECK(BaselineJson(*read) == BaselineJson(b));
}

TEST_CASE("baseline errors name the file and the key", "[kb]") {
  TempDir dir;
  auto error = [&](const std::string& text) {
    auto r = ReadBaseline(dir.Write("b.json", text));
    return r.ok() ? std::string() : std::string(r.status().message());
  };
  std::string e = error(R"({"level1": {"1_Foo.py": {"mean": "fast"}}})");
  CHECK_THAT(e, Catch::Contains("level1/1_Foo.py/mean: expected a number, got string"));
  CHECK_THAT(e, Catch::Contains("b.json"));
  CHECK_THAT(error(R"({"level1": {"1_Foo.py": {"std": 1}}})"), Catch::Contains("level1/1_Foo.py/mean: missing"));
  CHECK_THAT(error(R"({"level1": {"1_Foo.py": {"mean": 0}}})"), Catch::Contains("must be positive"));
  CHECK_THAT(error(R"({"level1": {"1_Foo.py": {"mean": 1, "num_trials": 2.5}}})"),
             Catch::Contains("level1/1_Foo.py/num_trials: expected an integer, got number"));
  CHECK_THAT(error(R"({"level1": {"1_Foo.py": {"mean": 1, "device": 0}}})"),
             Catch::Contains("level1/1_Foo.py/device: expected a string"));
  CHECK_THAT(error(R"({"level1": [1, 2]})"), Catch::Contains("level1: expected an object of tasks, got array"));
  CHECK_THAT(error(R"({"level1": {"1_Foo.py": 3}})"), Catch::Contains("level1/1_Foo.py: expected an object"));
  CHECK_THAT(error("[]"), Catch::Contains("expected an object of levels"));
  CHECK_THAT(error("{\"level1\": "), Catch::Contains("not JSON"));
  auto missing = ReadBaseline((fs::path(dir.path()) / "nope.json").string());
  CHECK(missing.status().code() == absl::StatusCode::kNotFound);
}

TEST_CASE("a baseline entry from samples has the sample standard deviation", "[kb]") {
  BaselineEntry e = BaselineFromSamples({1, 2, 3, 4}, "H100", "cuda:1");
  CHECK(e.mean == 2.5);
  CHECK(e.std == Approx(std::sqrt(5.0 / 3)));
  CHECK(e.min == 1);
  CHECK(e.max == 4);
  CHECK(e.num_trials == 4);
  CHECK(e.hardware == "H100");
  CHECK(e.device == "cuda:1");
  CHECK(BaselineFromSamples({7}, "", "").std == 0);
  CHECK(BaselineFromSamples({}, "", "").num_trials == 0);
}

TEST_CASE("tasks are listed by level and problem, other files ignored", "[kb]") {
  TempDir dir;
  dir.Write("level1/1_Square_matmul.py");
  dir.Write("level1/10_Conv.py");
  dir.Write("level1/2_Relu.py");
  dir.Write("level1/notes.txt");
  dir.Write("level1/__init__.py");
  dir.Write("level1/helpers/3_Nested.py");
  dir.Write("level2/1_Conv_ReLU.py");
  dir.Write("levels/5_NotALevel.py");
  dir.Write("README.md");
  auto tasks = ListTasks(dir.path());
  INFO(tasks.status());
  REQUIRE(tasks.ok());
  REQUIRE(tasks->size() == 4);
  std::vector<std::pair<int, int>> order;
  for (const auto& t : *tasks) order.push_back({t.level, t.problem});
  CHECK(order == std::vector<std::pair<int, int>>{{1, 1}, {1, 2}, {1, 10}, {2, 1}});
  CHECK((*tasks)[2].name == "10_Conv.py");
  CHECK((*tasks)[2].path == (fs::path(dir.path()) / "level1" / "10_Conv.py").string());
  CHECK(ParseTaskFileName("12_Foo_bar_.py") == 12);
  CHECK_FALSE(ParseTaskFileName("12_.py"));
  CHECK_FALSE(ParseTaskFileName("0_Zero.py"));
  CHECK_FALSE(ParseTaskFileName("x1_Foo.py"));
  CHECK_FALSE(ParseTaskFileName("1_Foo.pyc"));
}

TEST_CASE("task listing errors: missing, empty, duplicate problem", "[kb]") {
  TempDir dir;
  auto missing = ListTasks((fs::path(dir.path()) / "nope").string());
  CHECK(missing.status().code() == absl::StatusCode::kNotFound);
  auto empty = ListTasks(dir.path());
  REQUIRE_FALSE(empty.ok());
  CHECK_THAT(std::string(empty.status().message()), Catch::Contains("no level<N>/ subdirectory"));
  dir.Write("level1/README.md");
  auto no_tasks = ListTasks(dir.path());
  REQUIRE_FALSE(no_tasks.ok());
  CHECK_THAT(std::string(no_tasks.status().message()), Catch::Contains("no <id>_<Name>.py file"));
  dir.Write("level1/1_Foo.py");
  dir.Write("level1/01_Bar.py");
  auto dup = ListTasks(dir.path());
  REQUIRE_FALSE(dup.ok());
  std::string m(dup.status().message());
  CHECK_THAT(m, Catch::Contains("1_Foo.py"));
  CHECK_THAT(m, Catch::Contains("01_Bar.py"));
  CHECK_THAT(m, Catch::Contains("problem 1 of level1"));
}

TEST_CASE("generation file names round-trip", "[kb]") {
  std::string name = GenerationFileName(2, 17, 0);
  CHECK(name == "level_2_problem_17_sample_0_kernel.py");
  auto g = ParseGenerationFileName(name);
  REQUIRE(g);
  CHECK(g->level == 2);
  CHECK(g->problem == 17);
  CHECK(g->sample == 0);
  for (int s : {1, 9, 123}) CHECK(ParseGenerationFileName(GenerationFileName(3, 100, s))->sample == s);
  for (const char* bad : {"level_2_problem_17_sample_0_kernel.pyc", "level_x_problem_1_sample_0_kernel.py",
                          "level_1_problem_2_sample__kernel.py", "level_0_problem_1_sample_0_kernel.py",
                          "level_1_problem_0_sample_0_kernel.py", "level_1_problem_1_sample_0.py",
                          "xlevel_1_problem_1_sample_0_kernel.py"}) {
    INFO(bad);
    CHECK_FALSE(ParseGenerationFileName(bad));
  }
}

TEST_CASE("generations are listed from the directory and one level below", "[kb]") {
  TempDir dir;
  dir.Write("level_1_problem_2_sample_0_kernel.py");
  dir.Write("level_1_problem_10_sample_0_kernel.py");
  dir.Write("level_1/level_1_problem_2_sample_1_kernel.py");
  dir.Write("level_2/level_2_problem_1_sample_0_kernel.py");
  dir.Write("level_2/deeper/level_2_problem_9_sample_0_kernel.py");  // two levels down: ignored
  dir.Write("level_1/notes.txt");
  dir.Write("eval_results.json");
  auto gens = ListGenerations(dir.path());
  INFO(gens.status());
  REQUIRE(gens.ok());
  REQUIRE(gens->size() == 4);
  std::vector<std::tuple<int, int, int>> order;
  for (const auto& g : *gens) order.push_back({g.level, g.problem, g.sample});
  CHECK(order == std::vector<std::tuple<int, int, int>>{{1, 2, 0}, {1, 2, 1}, {1, 10, 0}, {2, 1, 0}});
  CHECK((*gens)[1].path == (fs::path(dir.path()) / "level_1" / "level_1_problem_2_sample_1_kernel.py").string());

  dir.Write("level_1/level_1_problem_2_sample_0_kernel.py");  // same sample as the top-level one
  auto dup = ListGenerations(dir.path());
  REQUIRE_FALSE(dup.ok());
  CHECK_THAT(std::string(dup.status().message()), Catch::Contains("level 1 problem 2 sample 0 appears twice"));

  TempDir empty;
  auto none = ListGenerations(empty.path());
  REQUIRE(none.ok());
  CHECK(none->empty());
  CHECK(ListGenerations((fs::path(empty.path()) / "nope").string()).status().code() == absl::StatusCode::kNotFound);
}

TEST_CASE("CUDA-L1 rows: null, None, missing and real custom code", "[kb]") {
  TempDir dir;
  std::string path = dir.Write("cuda_l1.jsonl",
                               R"J({"level_id": 1, "task_id": 1, "ref_code": "import torch", "custom_code": null, "score_default": null}
{"level_id": 1, "task_id": 2, "ref_code": "r2", "custom_code": "None", "score_default": 1.5, "score_a100": 1.2, "score_h100": null}

{"level_id": 2, "task_id": 3, "ref_code": "r3"}
   
{"level_id": 3, "task_id": 4, "ref_code": "r4", "custom_code": "load_inline(...)", "score_default": "None", "score_l40": "2.25", "other": [1]}
{"level_id": 3, "task_id": 5, "custom_code": "  \n"})J"
                               "\r\n");
  auto rows = ReadCudaL1(path);
  INFO(rows.status());
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 5);
  const auto& r = *rows;
  CHECK(r[0].line == 1);
  CHECK(r[0].ref_code == "import torch");
  CHECK_FALSE(r[0].custom_code);
  CHECK_FALSE(r[0].score_default);
  CHECK(r[1].line == 2);
  CHECK_FALSE(r[1].custom_code);
  CHECK(r[1].score_default == 1.5);
  CHECK(r[1].other_scores == std::map<std::string, double>{{"score_a100", 1.2}});
  CHECK(r[2].line == 4);  // the blank line still counts
  CHECK(r[2].level_id == 2);
  CHECK(r[2].task_id == 3);
  CHECK_FALSE(r[2].custom_code);
  CHECK(r[3].line == 6);
  REQUIRE(r[3].custom_code);
  CHECK(*r[3].custom_code == "load_inline(...)");
  CHECK_FALSE(r[3].score_default);
  CHECK(r[3].other_scores == std::map<std::string, double>{{"score_l40", 2.25}});
  CHECK(r[4].ref_code.empty());
  CHECK_FALSE(r[4].custom_code);  // blank
}

TEST_CASE("CUDA-L1 errors name the line and the field", "[kb]") {
  TempDir dir;
  auto error = [&](const std::string& text) {
    auto r = ReadCudaL1(dir.Write("l1.jsonl", text));
    return r.ok() ? std::string() : std::string(r.status().message());
  };
  const std::string good = R"({"level_id": 1, "task_id": 1, "custom_code": "x"})" "\n";
  std::string e = error(good + "\n" + R"({"level_id": 1, "task_id": )" + "\n");
  CHECK_THAT(e, Catch::Contains("line 3: not JSON"));
  CHECK_THAT(e, Catch::Contains("l1.jsonl"));
  CHECK_THAT(error(good + R"({"level_id": "1", "task_id": 1})"),
             Catch::Contains("line 2: level_id: expected an integer, got string"));
  CHECK_THAT(error(R"({"level_id": 1})"), Catch::Contains("line 1: task_id: missing"));
  CHECK_THAT(error(R"({"level_id": 1, "task_id": 2, "custom_code": 5})"),
             Catch::Contains("line 1: custom_code: expected a string or null, got number"));
  CHECK_THAT(error(R"({"level_id": 1, "task_id": 2, "score_default": true})"),
             Catch::Contains("line 1: score_default: expected a number or null, got boolean"));
  CHECK_THAT(error(R"({"level_id": 1, "task_id": 2, "score_x": "fast"})"),
             Catch::Contains("line 1: score_x: expected a number"));
  CHECK_THAT(error("[1, 2]"), Catch::Contains("line 1: expected a JSON object, got array"));
  CHECK(ReadCudaL1((fs::path(dir.path()) / "nope.jsonl").string()).status().code() == absl::StatusCode::kNotFound);
}

TEST_CASE("CUDA-L1 streams a large file and a callback can stop it", "[kb]") {
  TempDir dir;
  // 400 rows with 30 KB code strings (12 MB): the size of the real release.
  std::string code(30000, 'x');
  std::string text;
  for (int i = 0; i < 400; ++i) {
    json row = {{"level_id", 1 + i % 3}, {"task_id", i}, {"ref_code", code}, {"custom_code", code + "\"\n"},
                {"score_default", 1.0 + i}};
    text += row.dump() + "\n";
  }
  std::string path = dir.Write("big.jsonl", text);
  int seen = 0;
  size_t code_bytes = 0;
  absl::Status s = ForEachCudaL1Row(path, [&](CudaL1Row r) {
    ++seen;
    code_bytes += r.custom_code ? r.custom_code->size() : 0;
    return absl::OkStatus();
  });
  CHECK(s.ok());
  CHECK(seen == 400);
  CHECK(code_bytes == 400 * 30002);
  seen = 0;
  s = ForEachCudaL1Row(path, [&](CudaL1Row r) {
    ++seen;
    return r.task_id == 9 ? absl::CancelledError("enough") : absl::OkStatus();
  });
  CHECK(s.code() == absl::StatusCode::kCancelled);
  CHECK(seen == 10);
}

TEST_CASE("CUDA-L1 result JSON has exactly the documented keys", "[kb]") {
  CudaL1Result r;
  r.level_id = 2;
  r.task_id = 7;
  r.status = "NO_KERNEL";
  json j = CudaL1ResultJson(r);
  CHECK(Keys(j) == std::set<std::string>{"level_id", "task_id", "status", "correct", "speedup", "speedup_ci",
                                         "flags", "custom_kernel", "reported_score", "message", "max_abs_error",
                                         "max_rel_error", "within_cuda_l1_tolerance", "verify_seconds", "time_seconds",
                                         "timing_pairs", "calls_per_sample", "measure_seconds", "timing_mode",
                                         "graph_fallback", "cuda_l1_verdict"});
  CHECK(j["cuda_l1_verdict"] == "NO_KERNEL");
  CHECK(j["within_cuda_l1_tolerance"].is_null());  // no correctness trials ran
  CHECK(j["timing_mode"].is_null());  // not timed
  CHECK(j["speedup"].is_null());
  CHECK(j["speedup_ci"].is_null());
  CHECK(j["reported_score"].is_null());
  CHECK(j["flags"] == json::array());
  r.status = "OK";
  r.correct = true;
  r.speedup = 1.8;
  r.speedup_ci = std::make_pair(1.7, 1.9);
  r.reported_score = 2.1;
  r.flags = {"NOISY"};
  r.timing_mode = "eager";
  r.graph_fallback = "candidate: capture failed";
  j = CudaL1ResultJson(r);
  CHECK(j["speedup"] == 1.8);
  CHECK(j["timing_mode"] == "eager");
  CHECK(j["graph_fallback"] == "candidate: capture failed");
  CHECK(j["speedup_ci"] == json::array({1.7, 1.9}));
  CHECK(j["reported_score"] == 2.1);
  CHECK(j["flags"] == json::array({"NOISY"}));
  CHECK(j["level_id"] == 2);
  // Which tolerance decided: wrong at ours (1e-4), right at CUDA-L1's 1e-2.
  r.status = "WRONG_ANSWER";
  r.max_abs_error = 3e-3;
  r.max_rel_error = 0.5;
  j = CudaL1ResultJson(r);
  CHECK(j["max_abs_error"] == 3e-3);
  CHECK(j["within_cuda_l1_tolerance"] == true);
  CHECK(j["cuda_l1_verdict"] == "OK");  // their harness would have accepted it
  r.max_abs_error = 0.2;  // relative slack may or may not pass it: not certainly
  r.max_rel_error = 0.005;
  CHECK(CudaL1ResultJson(r)["within_cuda_l1_tolerance"] == false);
  CHECK(CudaL1ResultJson(r)["cuda_l1_verdict"] == "WRONG_ANSWER");
  CHECK(CudaL1Summary({r})["wrong_within_cuda_l1_tolerance"] == 0);
  CHECK(CudaL1Summary({r})["correct_at_cuda_l1"] == 0);
  r.max_abs_error = 0.001;
  CHECK(CudaL1Summary({r})["wrong_within_cuda_l1_tolerance"] == 1);
  CHECK(CudaL1Summary({r})["correct_at_cuda_l1"] == 1);
  // A verified row with crl's trust flag is timed, counted as timed, not
  // trusted, and OK by their harness.
  CudaL1Result flagged;
  flagged.status = "OK";
  flagged.correct = true;
  flagged.speedup = 3.0;
  flagged.flags = {"WRITE_AFTER_RETURN"};
  r.speedup.reset();  // a wrong answer is never timed
  const json summary = CudaL1Summary({flagged, r});
  CHECK(summary["timed"] == 1);
  CHECK(summary["trusted"] == 0);
  CHECK(summary["correct_at_cuda_l1"] == 2);
}

TEST_CASE("CUDA-L1 summary counts statuses and flags and compares like for like", "[kb]") {
  auto row = [](std::string status, bool correct, std::optional<double> speedup,
                std::optional<double> reported, std::vector<std::string> flags = {}) {
    CudaL1Result r;
    r.status = std::move(status);
    r.correct = correct;
    r.speedup = speedup;
    r.reported_score = reported;
    r.flags = std::move(flags);
    return r;
  };
  std::vector<CudaL1Result> rows = {
      row("OK", true, 2.0, 3.0),
      row("OK", true, 8.0, 12.0),
      row("OK", true, 1.0, std::nullopt, {"NO_CUSTOM_KERNEL"}),  // trusted, no reported score
      row("OK", true, 50.0, 60.0, {"SIDE_STREAM", "SIDE_STREAM"}),  // flagged: left out
      row("WRONG_ANSWER", false, std::nullopt, 5.0),
      row("NO_KERNEL", false, std::nullopt, std::nullopt),
      row("INFRA_ERROR", false, std::nullopt, 4.0),
  };
  json s = CudaL1Summary(rows);
  INFO(s.dump(2));
  CHECK(s["rows"] == 7);
  CHECK(s["correct"] == 4);
  CHECK(s["trusted"] == 3);
  CHECK(s["by_status"] == json{{"OK", 4}, {"WRONG_ANSWER", 1}, {"NO_KERNEL", 1}, {"INFRA_ERROR", 1}});
  CHECK(s["by_flag"] == json{{"NO_CUSTOM_KERNEL", 1}, {"SIDE_STREAM", 1}});
  CHECK(s["measured_speedup"]["count"] == 3);
  CHECK(s["measured_speedup"]["mean"] == Approx(11.0 / 3));
  CHECK(s["measured_speedup"]["median"] == Approx(2.0));
  CHECK(s["measured_speedup"]["geomean"] == Approx(std::cbrt(16.0)));
  CHECK(s["reported_score"]["count"] == 2);
  CHECK(s["reported_score"]["mean"] == Approx(7.5));
  CHECK(s["reported_score"]["median"] == Approx(7.5));
  CHECK(s["reported_score"]["geomean"] == Approx(6.0));
  json empty = CudaL1Summary({});
  CHECK(empty["rows"] == 0);
  CHECK(empty["by_status"] == json::object());
  CHECK(empty["measured_speedup"]["geomean"] == 0);
}

TEST_CASE("custom kernels are told from pure PyTorch statically", "[kb]") {
  const char* load_inline = R"(
import torch
from torch.utils.cpp_extension import load_inline
src = """
#include <torch/extension.h>
__global__ void k(float* x) {}
"""
mod = load_inline(name="k", cpp_sources="", cuda_sources=src, functions=["f"])
class ModelNew(torch.nn.Module):
    def forward(self, x): return mod.f(x)
)";
  const char* cpp_load = R"(
import torch.utils.cpp_extension
ext = torch.utils.cpp_extension.load(name="ext", sources=["k.cu"])
)";
  const char* aliased_load = R"(
from torch.utils.cpp_extension import (
    load as build_ext,
)
ext = build_ext("ext", ["k.cu"])
)";
  const char* module_alias = R"(
import torch.utils.cpp_extension as cext
ext = cext.load("e", sources=["k.cu"])
)";
  const char* triton = R"(
import triton
import triton.language as tl

@triton.jit
def add_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pass
)";
  const char* triton_bare = R"(
from triton import jit
@jit
def k(x): pass
)";
  const char* cupy = R"(
import cupy as cp
kern = cp.RawKernel(r'''extern "C" __global__ void k() {}''', 'k')
)";
  const char* cupy_module = "import cupy\nm = cupy.RawModule(code=SRC)\n";
  const char* numba = "from numba import cuda\n@cuda.jit\ndef k(a):\n    pass\n";
  const char* pure = R"(
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    """Fuses the ops in plain PyTorch; no load_inline() or @triton.jit needed."""
    def __init__(self):
        super().__init__()
        # A custom kernel via load_inline(...) was slower.
        self.w = torch.load("weights.pt")  # a torch.load, not an extension load
    def forward(self, x):
        s = "cupy.RawKernel(" + '@triton.jit'
        return torch.relu(x @ x.T)
)";
  const char* imports_only = R"(
from torch.utils.cpp_extension import load_inline, load
import triton
def forward(x):
    return x.load(3)
)";
  CHECK(ContainsCustomKernel(load_inline));
  CHECK(ContainsCustomKernel(cpp_load));
  CHECK(ContainsCustomKernel(aliased_load));
  CHECK(ContainsCustomKernel(module_alias));
  CHECK(ContainsCustomKernel(triton));
  CHECK(ContainsCustomKernel(triton_bare));
  CHECK(ContainsCustomKernel(cupy));
  CHECK(ContainsCustomKernel(cupy_module));
  CHECK(ContainsCustomKernel(numba));
  CHECK_FALSE(ContainsCustomKernel(pure));
  CHECK_FALSE(ContainsCustomKernel(imports_only));
  CHECK_FALSE(ContainsCustomKernel(""));
}

}  // namespace
}  // namespace crl::kb
