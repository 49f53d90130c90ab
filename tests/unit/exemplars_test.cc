// Exemplar selection: CUDA-L1's score buckets, the trust rules, dedupe and
// determinism.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <set>

#include "services/prompt/exemplars.h"

namespace crl::prompt {
namespace {

v1::Exemplar Variant(const std::string& id, double speedup, std::vector<v1::Flag> flags = {},
                     v1::Verdict verdict = v1::VERDICT_OK) {
  v1::Exemplar e;
  e.set_variant_id(id);
  e.set_source("int crl_run_" + id + "() { return " + std::to_string(speedup) + "; }");
  e.set_verdict(verdict);
  e.set_speedup(speedup);
  for (auto f : flags) e.add_flags(f);
  return e;
}

SelectionParams Params(int k, v1::ExemplarStrategy s = v1::EXEMPLAR_STRATEGY_BUCKETS) {
  SelectionParams p;
  p.strategy = s;
  p.num_exemplars = k;
  return p;
}

TEST_CASE("a bucket is drawn with the softmax of its score", "[exemplars]") {
  // Four buckets far apart on the log scale, two variants each.
  std::vector<v1::Exemplar> pool;
  const double speedups[] = {0.5, 0.52, 1.0, 1.02, 1.5, 1.55, 2.4, 2.5};
  for (int i = 0; i < 8; ++i) pool.push_back(Variant("v" + std::to_string(i), speedups[i]));
  SelectionParams p = Params(1);
  p.fast_guarantee = false;  // the guarantee would change the first draw's odds
  p.temperature = 0.5;
  Selection first = SelectExemplars(pool, p, 1);
  REQUIRE(first.buckets.size() == 4);
  // softmax(mean score / T) over the buckets, computed here independently.
  std::vector<double> expected;
  double z = 0;
  for (const auto& b : first.buckets) {
    double mean = (pool[b[0]].speedup() + pool[b[1]].speedup()) / 2;
    expected.push_back(std::exp(mean / 0.5));
    z += expected.back();
  }
  for (double& e : expected) e /= z;
  for (size_t b = 0; b < expected.size(); ++b) {
    CHECK(first.bucket_probabilities[b] == Approx(expected[b]).epsilon(1e-9));
  }
  std::map<int, int> bucket_of;
  for (size_t b = 0; b < first.buckets.size(); ++b) {
    for (int i : first.buckets[b]) bucket_of[i] = static_cast<int>(b);
  }
  const int draws = 20000;
  std::vector<int> seen(4, 0);
  for (int seed = 1; seed <= draws; ++seed) {
    Selection s = SelectExemplars(pool, p, seed);
    REQUIRE(s.chosen.size() == 1);
    ++seen[bucket_of[s.chosen[0]]];
  }
  // Stated bound: each bucket's frequency within 0.015 of its probability
  // (over 4 standard errors of a binomial at n = 20000).
  for (size_t b = 0; b < 4; ++b) {
    INFO("bucket " << b << ": " << seen[b] / double(draws) << " vs " << expected[b]);
    CHECK(std::fabs(seen[b] / double(draws) - expected[b]) < 0.015);
  }
}

TEST_CASE("selection is deterministic for a seed and shows the fast ones last", "[exemplars]") {
  std::vector<v1::Exemplar> pool;
  for (int i = 0; i < 12; ++i) pool.push_back(Variant("v" + std::to_string(i), 0.6 + 0.2 * i));
  Selection a = SelectExemplars(pool, Params(3), 42);
  Selection b = SelectExemplars(pool, Params(3), 42);
  CHECK(a.chosen == b.chosen);
  REQUIRE(a.chosen.size() == 3);
  for (size_t i = 1; i < a.chosen.size(); ++i) {
    CHECK(pool[a.chosen[i - 1]].speedup() <= pool[a.chosen[i]].speedup());
  }
  std::set<std::vector<int>> distinct;
  for (uint64_t seed = 1; seed <= 50; ++seed) distinct.insert(SelectExemplars(pool, Params(3), seed).chosen);
  CHECK(distinct.size() > 10);
}

TEST_CASE("flagged variants are never shown as fast; the guarantee shows a trusted one",
          "[exemplars]") {
  // The only big speedups are flagged: they score as the reference.
  std::vector<v1::Exemplar> pool = {Variant("hack1", 40, {v1::FLAG_SIDE_STREAM}),
                                    Variant("hack2", 12, {v1::FLAG_WRITE_AFTER_RETURN}),
                                    Variant("slow", 0.7), Variant("honest", 1.3),
                                    Variant("label", 1.6, {v1::FLAG_NO_CUSTOM_KERNEL})};
  CHECK(Score(pool[0]) == 1.0);
  CHECK(TrustedSpeedup(pool[0]) == 0);
  CHECK(TrustedSpeedup(pool[4]) == 1.6);  // a label, not a suspicion
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    Selection s = SelectExemplars(pool, Params(2), seed);
    bool fast = false;
    for (int i : s.chosen) fast |= TrustedSpeedup(pool[i]) > 1;
    CHECK(fast);  // honest or label, never only hacks and slow ones
  }
  Selection top = SelectExemplars(pool, Params(2, v1::EXEMPLAR_STRATEGY_TOP_K), 1);
  REQUIRE(top.chosen.size() == 2);
  CHECK(pool[top.chosen[0]].variant_id() == "honest");  // shown slowest first
  CHECK(pool[top.chosen[1]].variant_id() == "label");
}

TEST_CASE("trusted_only: a flagged or untimed variant is never shown, not even to fill the count",
          "[exemplars]") {
  v1::Exemplar untimed = Variant("untimed", 0);
  std::vector<v1::Exemplar> pool = {Variant("noisy", 1.3, {v1::FLAG_NOISY}), Variant("slow", 0.2), untimed,
                                    Variant("label", 1.6, {v1::FLAG_NO_CUSTOM_KERNEL})};
  SelectionParams p = Params(3);
  // By default the flagged and untimed ones fill the count.
  CHECK(SelectExemplars(pool, p, 5).chosen.size() == 3);
  p.trusted_only = true;
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    Selection s = SelectExemplars(pool, p, seed);
    std::set<std::string> ids;
    for (int i : s.chosen) ids.insert(pool[i].variant_id());
    CHECK(ids == std::set<std::string>{"slow", "label"});
    bool noted = false;
    for (const auto& n : s.notes) noted |= n.find("2 variant(s) skipped (no trusted speedup") != std::string::npos;
    CHECK(noted);
  }
  v1::ExemplarSelection proto;
  proto.set_trusted_only(true);
  CHECK(ParamsFrom(proto, 0).trusted_only);
  CHECK_FALSE(ParamsFrom(v1::ExemplarSelection(), 0).trusted_only);
}

TEST_CASE("only verified variants count, and each code once", "[exemplars]") {
  v1::Exemplar a = Variant("a", 1.2);
  v1::Exemplar same = a;  // the same code, other comments and layout
  same.set_variant_id("a-copy");
  same.set_source("// a comment\nint   crl_run_a() {\n  return 1.200000; /* x */ }\n");
  a.set_source("int crl_run_a() { return 1.200000; }");
  same.set_speedup(1.5);
  std::vector<v1::Exemplar> pool = {a, same, Variant("wrong", 3, {}, v1::VERDICT_WRONG_ANSWER),
                                    Variant("b", 0.9)};
  CHECK(NormalizedCode(pool[0].source()) == NormalizedCode(pool[1].source()));
  Selection s = SelectExemplars(pool, Params(4), 3);
  std::set<std::string> ids;
  for (int i : s.chosen) ids.insert(pool[i].variant_id());
  CHECK(ids == std::set<std::string>{"a-copy", "b"});  // the better copy; no wrong answer
  bool noted_unverified = false, noted_duplicate = false;
  for (const auto& n : s.notes) {
    noted_unverified |= n.find("not verified") != std::string::npos;
    noted_duplicate |= n.find("duplicate") != std::string::npos;
  }
  CHECK(noted_unverified);
  CHECK(noted_duplicate);
  CHECK(SelectExemplars(pool, Params(2, v1::EXEMPLAR_STRATEGY_NONE), 1).chosen.empty());
  CHECK(SelectExemplars({}, Params(2), 1).chosen.empty());
  // A preprocessor line is code, not a comment.
  CHECK(NormalizedCode("#include <a>\nx") != NormalizedCode("#include <b>\nx"));
  CHECK(NormalizedCode("# note\nx") == NormalizedCode("x"));
}

TEST_CASE("uniform picks without replacement and K is capped", "[exemplars]") {
  std::vector<v1::Exemplar> pool;
  for (int i = 0; i < 5; ++i) pool.push_back(Variant("v" + std::to_string(i), 1 + i));
  Selection s = SelectExemplars(pool, Params(8, v1::EXEMPLAR_STRATEGY_UNIFORM), 9);
  CHECK(s.chosen.size() == 5);
  CHECK(std::set<int>(s.chosen.begin(), s.chosen.end()).size() == 5);
  v1::ExemplarSelection request;
  request.set_num_exemplars(100);
  CHECK(ParamsFrom(request, 0).num_exemplars == kMaxExemplars);
  CHECK(ParamsFrom(v1::ExemplarSelection(), 3).num_exemplars == 3);  // the legacy field
}

}  // namespace
}  // namespace crl::prompt
