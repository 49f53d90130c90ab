// A run's report from its variants: the per-round verdict mix, rewards and
// shares, best speedup per task and fast_p follow the definitions in
// lib/report/summary.h; the files are written, the PNGs are real PNGs of the
// chart's size, and the HTML embeds every plot and runs no script.
#include <catch2/catch.hpp>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/file.h"
#include "lib/report/report.h"

namespace crl::report {
namespace {

namespace fs = std::filesystem;

v1::Variant V(const std::string& key, const std::string& stage, const std::string& task, v1::Verdict verdict,
              double speedup, double reward, bool trusted = true) {
  v1::Variant v;
  v.set_key(key);
  v.set_stage(stage);
  v.set_task_name(task);
  v.set_round(std::stoi(key.substr(key.find("/r") + 2)));
  v.set_verdict(verdict);
  v.set_speedup(speedup);
  v.set_scored(true);
  v.set_policy_version("3");
  v.mutable_reward()->set_status(trusted ? v1::REWARD_STATUS_OK : v1::REWARD_STATUS_WITHHELD);
  v.mutable_reward()->set_reward(reward);
  if (!trusted) v.add_flags(v1::FLAG_NOISY);
  return v;
}

v1::Run RunOf(const std::string& id, const std::string& training) {
  v1::Run r;
  r.set_run_id(id);
  r.set_state(v1::RUN_STATE_SUCCEEDED);
  r.mutable_spec()->set_training(training);
  for (const char* t : {"a", "b", "c"}) r.mutable_spec()->add_tasks()->set_name(t);
  return r;
}

uint32_t Be32(const std::string& s, size_t at) {
  return (uint8_t(s[at]) << 24) | (uint8_t(s[at + 1]) << 16) | (uint8_t(s[at + 2]) << 8) | uint8_t(s[at + 3]);
}

TEST_CASE("a run summary: verdict mix, shares over judged candidates, trusted speedups only", "[report]") {
  std::vector<v1::Variant> vs = {
      V("s0/r0/a/0", "keep-successes", "a", v1::VERDICT_OK, 2.0, 1.0),
      V("s0/r0/a/1", "keep-successes", "a", v1::VERDICT_OK, 0.9, 0.1),
      V("s0/r0/b/0", "keep-successes", "b", v1::VERDICT_OK, 8.0, 0.0, /*trusted=*/false),
      V("s0/r0/b/1", "keep-successes", "b", v1::VERDICT_WRONG_ANSWER, 0, -1.0),
      V("s1/r1/a/0", "contrastive-rl", "a", v1::VERDICT_OK, 3.0, 1.5),
      V("s1/r1/b/0", "contrastive-rl", "b", v1::VERDICT_COMPILE_ERROR, 0, -1.0),
  };
  vs.push_back(V("s1/r1/b/1", "contrastive-rl", "b", v1::VERDICT_UNSPECIFIED, 0, 0));
  vs.back().set_infra_failure(true);
  vs.back().mutable_reward()->set_status(v1::REWARD_STATUS_UNSPECIFIED);
  vs.push_back(V("s1/r1/b/2", "contrastive-rl", "b", v1::VERDICT_UNSPECIFIED, 0, -1.0));
  vs.back().set_parse_error(v1::PARSE_ERROR_NO_CODE_BLOCK);
  v1::Variant unscored = V("s1/r1/c/0", "contrastive-rl", "c", v1::VERDICT_OK, 5.0, 1.0);
  unscored.set_scored(false);
  vs.push_back(unscored);

  RunSummary s = Summarize(RunOf("r", ""), vs);
  CHECK(s.candidates == 8);  // the unscored one is not counted
  REQUIRE(s.rounds.size() == 2);
  const RoundStats& first = s.rounds[0];
  CHECK(first.label == "keep-successes 1");
  CHECK(first.candidates == 4);
  CHECK(first.outcomes[int(Outcome::kFaster)] == 1);
  CHECK(first.outcomes[int(Outcome::kVerified)] == 1);
  CHECK(first.outcomes[int(Outcome::kFlagged)] == 1);
  CHECK(first.outcomes[int(Outcome::kWrongAnswer)] == 1);
  CHECK(first.verified_share == Approx(0.75));
  CHECK(first.faster_share == Approx(0.25));
  CHECK(first.rewarded == 3);  // the withheld one is not a reward
  CHECK(first.mean_reward == Approx((1.0 + 0.1 - 1.0) / 3));
  CHECK(first.best_speedup == Approx(2.0));  // the flagged 8x is not trusted
  const RoundStats& second = s.rounds[1];
  CHECK(second.label == "contrastive-rl 2");
  CHECK(second.candidates == 4);
  CHECK(second.outcomes[int(Outcome::kInfra)] == 1);
  CHECK(second.outcomes[int(Outcome::kRejected)] == 1);
  // Over judged candidates: the infrastructure failure is not the model's.
  CHECK(second.verified_share == Approx(1.0 / 3));
  CHECK(second.rewarded == 3);
  // Tasks in the spec's order, c with nothing; fast_p over all three.
  REQUIRE(s.tasks.size() == 3);
  CHECK(s.tasks[0].best_speedup == Approx(3.0));
  CHECK(s.tasks[1].best_speedup == 0);
  CHECK(s.tasks[1].verified == 1);
  CHECK(s.tasks[2].candidates == 0);
  CHECK(s.fast_p.at("fast_0") == Approx(1.0 / 3));
  CHECK(s.fast_p.at("fast_2") == Approx(1.0 / 3));
  CHECK(s.speedups == std::vector<double>{0.9, 2.0, 3.0});
}

TEST_CASE("a NOISY timing rewarded at its interval's end is not a trusted speedup", "[report]") {
  v1::Variant v = V("s0/r0/a/0", "contrastive-rl", "a", v1::VERDICT_OK, 2.0, 0.2);
  CHECK(Trusted(v));
  CHECK(OutcomeOf(v) == Outcome::kFaster);
  // The scorer rewards a NOISY result at the end of its interval nearest 1
  // (status OK); its raw speedup still counts for nothing.
  v.add_flags(v1::FLAG_NOISY);
  REQUIRE(v.reward().status() == v1::REWARD_STATUS_OK);
  CHECK_FALSE(Trusted(v));
  CHECK(OutcomeOf(v) == Outcome::kFlagged);
  const RunSummary s = Summarize(RunOf("r", "on"), {v});
  REQUIRE(s.rounds.size() == 1);
  CHECK(s.rounds[0].faster_share == 0);
  // FLAG_NO_CUSTOM_KERNEL labels a rewrite; it casts no doubt.
  v1::Variant plain = V("s0/r0/a/1", "contrastive-rl", "a", v1::VERDICT_OK, 2.0, 0.2);
  plain.add_flags(v1::FLAG_NO_CUSTOM_KERNEL);
  CHECK(Trusted(plain));
}

TEST_CASE("a report: files, real PNGs, every plot embedded, both sides in summary.json", "[report]") {
  const std::string dir = (fs::temp_directory_path() / ("crl-report-" + std::to_string(::getpid()))).string();
  ReportInput in;
  in.run = RunOf("trained-run", "");
  in.variants = {V("s0/r0/a/0", "contrastive-rl", "a", v1::VERDICT_OK, 1.5, 1.0),
                 V("s0/r1/a/0", "contrastive-rl", "a", v1::VERDICT_OK, 2.5, 1.2),
                 V("s0/r1/a/1", "contrastive-rl", "a", v1::VERDICT_OK, 9.0, 0)};
  in.variants.back().add_flags(v1::FLAG_SIDE_STREAM);  // caught: a hack case
  in.has_twin = true;
  in.twin = RunOf("twin-run", "none");
  in.twin_variants = {V("s0/r0/a/0", "contrastive-rl", "a", v1::VERDICT_OK, 1.5, 1.0),
                      V("s0/r1/a/0", "contrastive-rl", "a", v1::VERDICT_WRONG_ANSWER, 0, -1.0)};
  auto files = WriteReport(in, dir);
  REQUIRE(files.ok());
  CHECK(files->size() == PlotFiles().size() + 3);
  for (const auto& png : PlotFiles()) {
    auto bytes = ReadFileToString(dir + "/" + png, "png");
    REQUIRE(bytes.ok());
    REQUIRE(bytes->size() > 1000);
    CHECK(bytes->compare(0, 8, "\x89PNG\r\n\x1a\n") == 0);
    CHECK(Be32(*bytes, 16) == 860);  // IHDR width and height
    CHECK(Be32(*bytes, 20) == 480);
  }
  auto html = ReadFileToString(dir + "/report.html", "html");
  REQUIRE(html.ok());
  size_t images = 0;
  for (size_t at = 0; (at = html->find("src=\"data:image/png;base64,", at)) != std::string::npos; ++at) ++images;
  CHECK(images == PlotFiles().size());
  CHECK(html->find("<script") == std::string::npos);
  CHECK(html->find("twin-run") != std::string::npos);
  CHECK_THAT(*html, Catch::Contains("1 candidate(s) caught: side-stream 1") &&
                        Catch::Contains("<td>s0/r1/a/1</td><td>a</td><td>side-stream</td>"));
  auto json = ReadFileToString(dir + "/summary.json", "json");
  REQUIRE(json.ok());
  auto j = nlohmann::json::parse(*json);
  CHECK(j["trained"]["run_id"] == "trained-run");
  CHECK(j["untrained"]["training"] == false);
  REQUIRE(j["rounds"].size() == 2);
  // Round 1: 2.5x trusted, 9x flagged (verified, not faster).
  CHECK(j["rounds"][1]["trained"]["faster_share"] == 0.5);
  CHECK(j["rounds"][1]["trained"]["verified_share"] == 1.0);
  CHECK(j["rounds"][1]["untrained"]["verified_share"] == 0.0);
  auto text = ReadFileToString(dir + "/summary.txt", "text");
  REQUIRE(text.ok());
  CHECK_THAT(*text, Catch::Contains("contrastive-rl 2") && Catch::Contains("untrained"));
  CHECK_FALSE(fs::exists(dir + "/training.png"));  // no training event: no curve
  CHECK_FALSE(j.contains("training_curve"));
  fs::remove_all(dir);
}

TEST_CASE("a report plots the run's training curve from its training events, a step once", "[report]") {
  const std::string dir = (fs::temp_directory_path() / ("crl-report-curve-" + std::to_string(::getpid()))).string();
  ReportInput in;
  in.run = RunOf("trained-run", "");
  in.variants = {V("s0/r0/a/0", "contrastive-rl", "a", v1::VERDICT_OK, 1.5, 1.0)};
  for (const auto& [step, loss] : std::vector<std::pair<int64_t, double>>{{2, -0.25}, {1, 0.75}, {2, 0.5}}) {
    v1::RunEvent e;
    e.set_kind("training");
    e.set_policy_step(step);
    e.mutable_training()->set_objective("policy-gradient");
    e.mutable_training()->set_loss(loss);
    e.mutable_training()->set_kl(0.01 * static_cast<double>(step));
    in.training.push_back(e);
  }
  v1::RunEvent other;
  other.set_kind("round");
  in.training.push_back(other);
  auto files = WriteReport(in, dir);
  REQUIRE(files.ok());
  CHECK(files->size() == PlotFiles().size() + 4);
  auto png = ReadFileToString(dir + "/training.png", "png");
  REQUIRE(png.ok());
  CHECK(png->compare(0, 8, "\x89PNG\r\n\x1a\n") == 0);
  auto html = ReadFileToString(dir + "/report.html", "html");
  REQUIRE(html.ok());
  CHECK_THAT(*html, Catch::Contains("<h2>Training</h2>") && Catch::Contains("<td>1</td><td>policy-gradient</td><td>0.75</td>") &&
                        Catch::Contains("<td>2</td><td>policy-gradient</td><td>0.5</td>"));
  auto j = nlohmann::json::parse(*ReadFileToString(dir + "/summary.json", "json"));
  REQUIRE(j["training_curve"].size() == 2);  // step 2 recorded twice (a resumed run): its last record
  CHECK(j["training_curve"][0]["policy_step"] == 1);
  CHECK(j["training_curve"][1]["loss"] == 0.5);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace crl::report
