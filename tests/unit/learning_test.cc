// Trained against untrained (lib/report/learning.h): F counts only trusted
// speedups above 1 over the model's samples (not infrastructure failures);
// the A/A round is recognised; Δ, its CI over seeds and tasks, and the sign
// test follow from coupled samples; p(fast) reads the log-probability of the
// token where the known answers part; the evaluation rounds are the later
// half unless told.
#include <catch2/catch.hpp>

#include <cmath>
#include <tuple>

#include "absl/strings/str_cat.h"

#include "lib/report/learning.h"
#include "lib/stats/stats.h"

namespace crl::report {
namespace {

// A sampled variant: `fast` a trusted 2x, else a trusted 0.5x; the code and
// token ids of the fast or slow answer (they part at token 2).
v1::Variant S(const std::string& key, const std::string& task, bool fast, double p_taken = 0.5) {
  v1::Variant v;
  v.set_key(key);
  v.set_task_name(task);
  v.set_stage("contrastive-rl");
  v.set_scored(true);
  v.set_verdict(v1::VERDICT_OK);
  v.set_speedup(fast ? 2.0 : 0.5);
  v.mutable_reward()->set_status(v1::REWARD_STATUS_OK);
  v.mutable_reward()->set_reward(fast ? 1.0 : -0.5);
  v.mutable_candidate()->set_source(fast ? "fast code\n" : "slow code");
  v.set_completion(absl::StrCat(fast ? "fast " : "slow ", key));
  for (int t : {7, 8, fast ? 9 : 10, 11}) v.add_token_ids(t);
  for (int i = 0; i < 4; ++i) v.add_logprobs(i == 2 ? static_cast<float>(std::log(p_taken)) : -0.01f);
  return v;
}

std::string Key(int round, const std::string& task, int i) {
  return absl::StrCat("s0/r", round, "/", task, "/", i);
}

std::map<std::string, KnownAnswers> Answers() {
  return {{"a", {"slow code", "fast code"}}, {"b", {"slow code", "fast code"}}};
}

TEST_CASE("F, parsed and verified share, flags and the A/A round of one pair", "[learning]") {
  SeedRuns runs;
  runs.seed = 7;
  // Round 0: the same completions on both sides (A/A); round 1: trained all
  // fast, twin half; one twin sample flagged NOISY; an infrastructure
  // failure is no sample.
  for (const char* t : {"a", "b"}) {
    for (int i = 0; i < 2; ++i) {
      runs.trained.push_back(S(Key(0, t, i), t, i == 0));
      runs.twin.push_back(S(Key(0, t, i), t, i == 0));
      runs.trained.push_back(S(Key(1, t, i), t, true));
      runs.twin.push_back(S(Key(1, t, i), t, i == 0));
    }
  }
  runs.twin[1].mutable_reward()->set_status(v1::REWARD_STATUS_WITHHELD);  // a's round-1 fast sample
  runs.twin[1].add_flags(v1::FLAG_NOISY);
  // a's round-1 slow sample did not parse; b's parsed and answered wrong.
  runs.twin[3].set_parse_error(v1::PARSE_ERROR_NO_CODE_BLOCK);
  runs.twin[3].set_verdict(v1::VERDICT_UNSPECIFIED);
  runs.twin[7].set_verdict(v1::VERDICT_WRONG_ANSWER);
  v1::Variant infra = S(Key(1, "a", 9), "a", false);
  infra.set_infra_failure(true);
  runs.trained.push_back(infra);
  // An sft epoch is not a sampled round.
  v1::Variant sft = S("s9/r0/a/0", "a", true);
  sft.set_stage("sft");
  runs.trained.push_back(sft);

  const SeedComparison c = CompareSeed(runs, Answers(), {});
  REQUIRE(c.rounds.size() == 2);
  const RoundPair& aa = c.rounds[0];
  CHECK(aa.label == "contrastive-rl 1");
  CHECK(aa.coupled == 4);
  CHECK(aa.identical == 4);
  CHECK_FALSE(aa.evaluation);
  CHECK(aa.trained.F() == Approx(0.5));
  const RoundPair& r = c.rounds[1];
  CHECK(r.evaluation);  // the later half of two rounds
  CHECK(r.trained.samples == 4);  // not the infrastructure failure
  CHECK(r.trained.F() == Approx(1.0));
  CHECK(r.twin.F() == Approx(0.25));  // the flagged fast sample is not trusted
  CHECK(r.twin.withheld == 1);
  CHECK(r.twin.flags.at("NOISY") == 1);
  CHECK(r.twin.parsed_share() == Approx(0.75));
  CHECK(r.twin.verified_share() == Approx(0.5));
  CHECK(r.trained.parsed_share() == Approx(1.0));
  CHECK(r.trained.fast_at_1 == Approx(1.0));
  CHECK(r.twin.fast_at_1 == Approx(0.25));  // (0 + 0.5) / 2 tasks
  CHECK(r.trained.F_low() < 1.0);
  CHECK(r.trained.F_high() == Approx(1.0));
  CHECK(c.delta == Approx(0.75));
}

TEST_CASE("p(fast) from the log-probability of the token where the answers part", "[learning]") {
  SeedRuns runs;
  // p of the token taken: 0.8 on the fast sample, 0.6 on the slow one:
  // p(fast) = (0.8 + (1 - 0.6)) / 2.
  runs.trained = {S(Key(0, "a", 0), "a", true, 0.8), S(Key(0, "a", 1), "a", false, 0.6)};
  // A sample whose tokens left the common prefix is on no branch.
  v1::Variant stray = S(Key(0, "a", 2), "a", true, 0.9);
  stray.set_token_ids(0, 99);
  runs.trained.push_back(stray);
  // A task without known answers has no p(fast).
  runs.trained.push_back(S(Key(0, "c", 0), "c", true, 0.7));
  const SeedComparison c = CompareSeed(runs, Answers(), {});
  REQUIRE(c.rounds.size() == 1);
  CHECK(c.rounds[0].trained.p_fast_samples == 2);
  CHECK(c.rounds[0].trained.p_fast == Approx(0.6));
  CHECK(c.rounds[0].twin.p_fast < 0);  // nothing sampled there
}

TEST_CASE("known answers: an sft run's examples, fast and slow by measured speedup", "[learning]") {
  std::vector<v1::Variant> sft;
  for (auto [key, code, speedup] : std::vector<std::tuple<std::string, std::string, double>>{
           {"s0/r0/a/0", "x", 0.4}, {"s0/r0/a/1", "y", 3.0}, {"s0/r0/b/0", "z", 1.0}}) {
    v1::Variant v = S(key, key.substr(6, 1), true);
    v.set_stage("sft");
    v.mutable_candidate()->set_source(code);
    v.set_speedup(speedup);
    sft.push_back(v);
  }
  auto known = KnownAnswersFrom(sft);
  REQUIRE(known.size() == 1);  // b has one example only
  CHECK(known.at("a").slow == "x");
  CHECK(known.at("a").fast == "y");
}

TEST_CASE("over seeds: Δ, a CI that resamples seeds then tasks, the sign test", "[learning]") {
  std::vector<SeedRuns> seeds;
  for (int s = 0; s < 3; ++s) {
    SeedRuns r;
    r.seed = s;
    for (int round = 0; round < 4; ++round) {
      for (const char* t : {"a", "b"}) {
        for (int i = 0; i < 4; ++i) {
          // Trained: fast from round 2 on; twin: fast on one sample in four.
          r.trained.push_back(S(Key(round, t, i), t, round >= 2 || i == 0));
          r.twin.push_back(S(Key(round, t, i), t, i == 0));
        }
      }
    }
    seeds.push_back(std::move(r));
  }
  LearningOptions o;
  o.evaluation_rounds = 2;
  const LearningSummary s = CompareSeeds(seeds, Answers(), o);
  REQUIRE(s.seeds.size() == 3);
  CHECK(s.seeds[0].rounds[1].evaluation == false);
  CHECK(s.seeds[0].rounds[2].evaluation == true);
  CHECK(s.delta == Approx(0.75));
  CHECK(s.ci_low == Approx(0.75));  // every seed and task agrees
  CHECK(s.ci_high == Approx(0.75));
  CHECK(s.sign_plus == 3 * 2 * 2 * 3);  // seeds x rounds x tasks x the three slow twin samples
  CHECK(s.sign_minus == 0);
  CHECK(s.sign_p < 1e-6);
  CHECK(s.verified_gap == Approx(0));

  // The same runs on both sides: Δ 0, a CI on 0, nothing for the sign test.
  for (auto& r : seeds) r.trained = r.twin;
  const LearningSummary null = CompareSeeds(seeds, Answers(), o);
  CHECK(null.delta == Approx(0));
  CHECK(null.ci_low <= 0);
  CHECK(null.ci_high >= 0);
  CHECK(null.sign_p == 1);
}

TEST_CASE("statistics: Wilson interval, sign test, two-level bootstrap", "[learning]") {
  auto w = stats::WilsonInterval(8, 10);
  CHECK(w.low == Approx(0.4902).epsilon(1e-3));
  CHECK(w.high == Approx(0.9433).epsilon(1e-3));
  CHECK(stats::WilsonInterval(0, 0).high == 0);
  CHECK(stats::SignTestP(5, 5) == Approx(1.0));
  CHECK(stats::SignTestP(10, 0) == Approx(2.0 / 1024));
  CHECK(stats::SignTestP(0, 0) == 1);
  // Two seeds that disagree: the interval spans both.
  auto ci = stats::HierarchicalBootstrap({{0.1, 0.1}, {0.5, 0.5}}, 2000, 3);
  CHECK(ci.low == Approx(0.1));
  CHECK(ci.high == Approx(0.5));
  auto same = stats::HierarchicalBootstrap({{0.2}, {}, {0.2, 0.2}}, 200, 3);
  CHECK(same.low == Approx(0.2));
  CHECK(same.high == Approx(0.2));
}

TEST_CASE("held-out tasks: every sampled round pooled, own kernels counted among the verified", "[learning]") {
  std::vector<v1::Variant> vs;
  // Two rounds of task h: fast with a kernel, slow PyTorch-only, one that
  // failed to compile; an infrastructure failure and an sft example are no
  // samples.
  vs.push_back(S(Key(0, "h", 0), "h", true));
  vs.push_back(S(Key(1, "h", 0), "h", false));
  vs.back().add_flags(v1::FLAG_NO_CUSTOM_KERNEL);
  vs.push_back(S(Key(1, "h", 1), "h", false));
  vs.back().set_verdict(v1::VERDICT_COMPILE_ERROR);
  vs.push_back(S(Key(1, "h", 2), "h", true));
  vs.back().set_infra_failure(true);
  vs.push_back(S("s9/r0/h/0", "h", true));
  vs.back().set_stage("sft");
  const SideRound s = PooledSamples(vs);
  CHECK(s.samples == 3);
  CHECK(s.verified == 2);
  CHECK(s.own_kernel == 1);
  CHECK(s.F() == Approx(1.0 / 3));
  CHECK(s.fast_at_1 == Approx(1.0 / 3));
  const std::string text = HeldOutText(s, PooledSamples({}));
  CHECK(text.find("trained     3 samples: parsed 100%, verified  67%, F 0.33") != std::string::npos);
  CHECK(text.find("1 of 2 verified with a kernel of their own") != std::string::npos);
  CHECK(HeldOutJson(s, PooledSamples({}))["trained"]["own_kernel"] == 1);
}

}  // namespace
}  // namespace crl::report
