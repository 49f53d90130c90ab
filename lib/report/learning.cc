#include "lib/report/learning.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/report/summary.h"
#include "lib/reward/names.h"
#include "lib/stats/stats.h"

namespace crl::report {
namespace {

using nlohmann::json;

bool Sampled(const v1::Variant& v) { return v.scored() && v.stage() != "sft" && !v.infra_failure(); }
bool FastAt(const v1::Variant& v, double p) { return Trusted(v) && v.speedup() > p; }

std::string Code(const v1::Variant& v) {
  std::string s = v.candidate().source();
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

using RoundId = std::pair<int, int>;  // stage index, round

RoundId RoundOf(const v1::Variant& v) {
  int si = 0, r = 0;
  KeyStageRound(v.key(), &si, &r);
  return {si, r};
}

// 1: the task's known fast answer, 0: its slow one, -1: neither (or unknown task).
int Branch(const v1::Variant& v, const std::map<std::string, KnownAnswers>& answers) {
  auto it = answers.find(v.task_name());
  if (it == answers.end() || v.parse_error() != v1::PARSE_ERROR_UNSPECIFIED) return -1;
  const std::string code = Code(v);
  if (code == it->second.fast) return 1;
  if (code == it->second.slow) return 0;
  return -1;
}

// Per task, where the fast and slow answers part: the first token index at
// which a sample of one differs from a sample of the other, with the token
// prefix before it (every sample on a known branch must start with it).
struct BranchPoint {
  size_t index = 0;
  std::vector<int> prefix;
};

std::map<std::string, BranchPoint> BranchPoints(const std::vector<const v1::Variant*>& all,
                                                const std::map<std::string, KnownAnswers>& answers) {
  std::map<std::string, std::pair<const v1::Variant*, const v1::Variant*>> firsts;  // slow, fast
  for (const v1::Variant* v : all) {
    const int b = Branch(*v, answers);
    if (b < 0 || v->token_ids_size() == 0) continue;
    auto& f = firsts[v->task_name()];
    if (b == 0 && !f.first) f.first = v;
    if (b == 1 && !f.second) f.second = v;
  }
  std::map<std::string, BranchPoint> out;
  for (const auto& [task, f] : firsts) {
    if (!f.first || !f.second) continue;
    const auto& a = f.first->token_ids();
    const auto& b = f.second->token_ids();
    size_t i = 0;
    while (i < static_cast<size_t>(std::min(a.size(), b.size())) && a[i] == b[i]) ++i;
    if (i >= static_cast<size_t>(std::min(a.size(), b.size()))) continue;
    out[task] = {i, std::vector<int>(a.begin(), a.begin() + i)};
  }
  return out;
}

// p(fast) of one sample, or a negative number when it cannot be read.
double SampleFastProbability(const v1::Variant& v, const std::map<std::string, KnownAnswers>& answers,
                             const std::map<std::string, BranchPoint>& points) {
  const int branch = Branch(v, answers);
  auto p = points.find(v.task_name());
  if (branch < 0 || p == points.end()) return -1;
  const size_t at = p->second.index;
  if (static_cast<size_t>(v.token_ids_size()) <= at || static_cast<size_t>(v.logprobs_size()) <= at) return -1;
  for (size_t i = 0; i < at; ++i) {
    if (v.token_ids(static_cast<int>(i)) != p->second.prefix[i]) return -1;
  }
  const double taken = std::exp(static_cast<double>(v.logprobs(static_cast<int>(at))));
  return branch == 1 ? taken : 1 - taken;
}

SideRound Side(const std::vector<const v1::Variant*>& vs, const std::map<std::string, KnownAnswers>& answers,
               const std::map<std::string, BranchPoint>& points) {
  SideRound s;
  std::map<std::string, std::pair<int, std::pair<int, int>>> per_task;  // samples, fast@1, fast@1.2
  double p_sum = 0;
  for (const v1::Variant* v : vs) {
    ++s.samples;
    auto& t = per_task[v->task_name()];
    ++t.first;
    if (v->parse_error() == v1::PARSE_ERROR_UNSPECIFIED) ++s.parsed;
    if (v->verdict() == v1::VERDICT_OK) ++s.verified;
    if (FastAt(*v, 1)) {
      ++s.fast;
      ++t.second.first;
    }
    if (FastAt(*v, 1.2)) ++t.second.second;
    if (v->verdict() == v1::VERDICT_OK && v->reward().status() == v1::REWARD_STATUS_WITHHELD) ++s.withheld;
    if (v->verdict() == v1::VERDICT_OK &&
        std::find(v->flags().begin(), v->flags().end(), v1::FLAG_NO_CUSTOM_KERNEL) == v->flags().end()) {
      ++s.own_kernel;
    }
    if (v->reward().status() == v1::REWARD_STATUS_OK) {
      ++s.rewarded;
      s.reward_sum += v->reward().reward();
    }
    std::set<std::string> seen;  // a flag counts once per sample
    for (int f : v->flags()) {
      if (IsTrustFlag(static_cast<v1::Flag>(f)) && seen.insert(FlagShortName(static_cast<v1::Flag>(f))).second) {
        ++s.flags[FlagShortName(static_cast<v1::Flag>(f))];
      }
    }
    const double p = SampleFastProbability(*v, answers, points);
    if (p >= 0) {
      p_sum += p;
      ++s.p_fast_samples;
    }
  }
  for (const auto& [task, t] : per_task) {
    s.fast_at_1 += static_cast<double>(t.second.first) / t.first / per_task.size();
    s.fast_at_1_2 += static_cast<double>(t.second.second) / t.first / per_task.size();
  }
  if (s.p_fast_samples > 0) s.p_fast = p_sum / s.p_fast_samples;
  return s;
}

std::map<RoundId, std::vector<const v1::Variant*>> ByRound(const std::vector<v1::Variant>& vs) {
  std::map<RoundId, std::vector<const v1::Variant*>> out;
  for (const auto& v : vs) {
    if (Sampled(v)) out[RoundOf(v)].push_back(&v);
  }
  return out;
}

SeedComparison Compare(const SeedRuns& runs, const std::map<std::string, KnownAnswers>& answers,
                       const std::map<std::string, BranchPoint>& points, const LearningOptions& options,
                       std::vector<double>* task_deltas, int* plus, int* minus) {
  SeedComparison out;
  out.seed = runs.seed;
  const auto trained = ByRound(runs.trained), twin = ByRound(runs.twin);
  std::set<RoundId> ids;
  for (const auto& [id, v] : trained) ids.insert(id);
  for (const auto& [id, v] : twin) ids.insert(id);
  const int n = static_cast<int>(ids.size());
  const int eval = options.evaluation_rounds > 0 ? std::min(options.evaluation_rounds, n) : std::max(1, n / 2);
  // Evaluation samples per task and side: [samples, fast].
  std::map<std::string, std::array<int, 4>> cells;  // trained samples, trained fast, twin samples, twin fast
  int verified_tr = 0, samples_tr = 0, verified_tw = 0, samples_tw = 0;
  int i = 0;
  static const std::vector<const v1::Variant*> kNone;
  for (const RoundId& id : ids) {
    const auto& tr = trained.count(id) ? trained.at(id) : kNone;
    const auto& tw = twin.count(id) ? twin.at(id) : kNone;
    RoundPair p;
    p.stage_index = id.first;
    p.round = id.second;
    const v1::Variant* any = !tr.empty() ? tr.front() : tw.front();
    p.label = absl::StrCat(any->stage(), " ", id.second + 1);
    p.trained = Side(tr, answers, points);
    p.twin = Side(tw, answers, points);
    p.evaluation = i++ >= n - eval;
    std::map<std::string, const v1::Variant*> twin_by_key;
    for (const v1::Variant* v : tw) twin_by_key[v->key()] = v;
    for (const v1::Variant* v : tr) {
      auto it = twin_by_key.find(v->key());
      if (it == twin_by_key.end()) continue;
      ++p.coupled;
      if (v->completion() == it->second->completion()) ++p.identical;
      if (p.evaluation) {
        const bool a = FastAt(*v, 1), b = FastAt(*it->second, 1);
        if (a && !b) ++*plus;
        if (b && !a) ++*minus;
      }
    }
    if (p.evaluation) {
      for (const v1::Variant* v : tr) {
        auto& c = cells[v->task_name()];
        ++c[0];
        c[1] += FastAt(*v, 1);
      }
      for (const v1::Variant* v : tw) {
        auto& c = cells[v->task_name()];
        ++c[2];
        c[3] += FastAt(*v, 1);
      }
      verified_tr += p.trained.verified;
      samples_tr += p.trained.samples;
      verified_tw += p.twin.verified;
      samples_tw += p.twin.samples;
    }
    out.rounds.push_back(std::move(p));
  }
  for (const auto& [task, c] : cells) {
    if (c[0] == 0 || c[2] == 0) continue;  // a task sampled on one side only says nothing of the difference
    task_deltas->push_back(static_cast<double>(c[1]) / c[0] - static_cast<double>(c[3]) / c[2]);
  }
  out.delta = stats::Mean(*task_deltas);
  out.verified_gap = (samples_tr > 0 ? static_cast<double>(verified_tr) / samples_tr : 0) -
                     (samples_tw > 0 ? static_cast<double>(verified_tw) / samples_tw : 0);
  return out;
}

std::map<std::string, BranchPoint> PointsOf(const std::vector<SeedRuns>& seeds,
                                            const std::map<std::string, KnownAnswers>& answers) {
  std::vector<const v1::Variant*> all;
  for (const auto& s : seeds) {
    for (const auto& v : s.trained) all.push_back(&v);
    for (const auto& v : s.twin) all.push_back(&v);
  }
  return BranchPoints(all, answers);
}

json SideJson(const SideRound& s) {
  return {{"samples", s.samples},
          {"F", s.F()},
          {"F_ci", {s.F_low(), s.F_high()}},
          {"parsed_share", s.parsed_share()},
          {"verified_share", s.verified_share()},
          {"withheld", s.withheld},
          {"mean_reward", s.mean_reward()},
          {"fast_at_1", s.fast_at_1},
          {"fast_at_1_2", s.fast_at_1_2},
          {"p_fast", s.p_fast >= 0 ? json(s.p_fast) : json(nullptr)},
          {"p_fast_samples", s.p_fast_samples},
          {"flags", s.flags}};
}

std::string Flags(const std::map<std::string, int>& flags) {
  std::string out;
  for (const auto& [name, n] : flags) absl::StrAppend(&out, out.empty() ? "" : " ", name, ":", n);
  return out.empty() ? "-" : out;
}

std::string PFast(const SideRound& s) { return s.p_fast >= 0 ? absl::StrFormat("%.2f", s.p_fast) : "  - "; }

}  // namespace

double SideRound::F_low() const { return stats::WilsonInterval(fast, samples).low; }
double SideRound::F_high() const { return stats::WilsonInterval(fast, samples).high; }

std::map<std::string, KnownAnswers> KnownAnswersFrom(const std::vector<v1::Variant>& sft_variants) {
  std::map<std::string, std::vector<const v1::Variant*>> by_task;
  for (const auto& v : sft_variants) {
    int si = 0, r = 0;
    if (v.stage() != "sft" || !KeyStageRound(v.key(), &si, &r) || r != 0 || !Trusted(v)) continue;
    by_task[v.task_name()].push_back(&v);
  }
  std::map<std::string, KnownAnswers> out;
  for (auto& [task, vs] : by_task) {
    if (vs.size() < 2) continue;
    auto [lo, hi] = std::minmax_element(vs.begin(), vs.end(), [](const v1::Variant* a, const v1::Variant* b) {
      return a->speedup() < b->speedup();
    });
    out[task] = {Code(**lo), Code(**hi)};
  }
  return out;
}

SeedComparison CompareSeed(const SeedRuns& runs, const std::map<std::string, KnownAnswers>& answers,
                           const LearningOptions& options) {
  std::vector<double> deltas;
  int plus = 0, minus = 0;
  return Compare(runs, answers, PointsOf({runs}, answers), options, &deltas, &plus, &minus);
}

LearningSummary CompareSeeds(const std::vector<SeedRuns>& seeds, const std::map<std::string, KnownAnswers>& answers,
                             const LearningOptions& options) {
  LearningSummary out;
  const auto points = PointsOf(seeds, answers);
  std::vector<std::vector<double>> groups;
  double gap = 0;
  for (const SeedRuns& s : seeds) {
    std::vector<double> deltas;
    out.seeds.push_back(Compare(s, answers, points, options, &deltas, &out.sign_plus, &out.sign_minus));
    // A seed with no task to compare says nothing: left out of Δ as the
    // bootstrap leaves it out.
    if (deltas.empty()) continue;
    groups.push_back(std::move(deltas));
    gap += out.seeds.back().verified_gap;
    out.delta += out.seeds.back().delta;
  }
  if (!groups.empty()) {
    out.delta /= groups.size();
    out.verified_gap = gap / groups.size();
  }
  const stats::Interval ci = stats::HierarchicalBootstrap(groups, options.bootstrap_resamples, options.bootstrap_seed);
  out.ci_low = ci.low;
  out.ci_high = ci.high;
  out.sign_p = stats::SignTestP(out.sign_plus, out.sign_minus);
  return out;
}

json LearningJson(const LearningSummary& s) {
  json seeds = json::array();
  for (const auto& sc : s.seeds) {
    json rounds = json::array();
    for (const auto& r : sc.rounds) {
      rounds.push_back({{"label", r.label},
                        {"stage_index", r.stage_index},
                        {"round", r.round + 1},
                        {"evaluation", r.evaluation},
                        {"coupled", r.coupled},
                        {"identical", r.identical},
                        {"trained", SideJson(r.trained)},
                        {"untrained", SideJson(r.twin)}});
    }
    seeds.push_back({{"seed", sc.seed}, {"delta", sc.delta}, {"verified_gap", sc.verified_gap}, {"rounds", rounds}});
  }
  return {{"delta", s.delta},
          {"delta_ci95", {s.ci_low, s.ci_high}},
          {"sign_test", {{"trained_only_fast", s.sign_plus}, {"untrained_only_fast", s.sign_minus}, {"p", s.sign_p}}},
          {"verified_gap", s.verified_gap},
          {"seeds", seeds}};
}

SideRound PooledSamples(const std::vector<v1::Variant>& variants) {
  std::vector<const v1::Variant*> sampled;
  for (const auto& v : variants) {
    if (Sampled(v)) sampled.push_back(&v);
  }
  return Side(sampled, {}, {});
}

std::string HeldOutText(const SideRound& trained, const SideRound& twin) {
  std::string out;
  for (const auto& [name, s] : {std::pair<const char*, const SideRound&>{"trained", trained}, {"untrained", twin}}) {
    absl::StrAppend(&out, absl::StrFormat("  %-9s %3d samples: parsed %3.0f%%, verified %3.0f%%, F %.2f, Fast@1 %.2f, "
                                          "%d of %d verified with a kernel of their own\n",
                                          name, s.samples, 100 * s.parsed_share(), 100 * s.verified_share(), s.F(),
                                          s.fast_at_1, s.own_kernel, s.verified));
  }
  return out;
}

json HeldOutJson(const SideRound& trained, const SideRound& twin) {
  auto side = [](const SideRound& s) {
    json j = SideJson(s);
    j["own_kernel"] = s.own_kernel;
    return j;
  };
  return {{"trained", side(trained)}, {"untrained", side(twin)}};
}

std::string LearningText(const LearningSummary& s, const std::string& title) {
  std::string out = absl::StrCat(title, "\n");
  for (const auto& sc : s.seeds) {
    absl::StrAppend(&out, absl::StrFormat("seed %d: Δ %+.3f (trained F − untrained F over the evaluation rounds)\n",
                                          sc.seed, sc.delta));
    absl::StrAppend(&out, absl::StrFormat("  %-18s %15s %15s %15s %13s %11s  %s\n", "round", "F", "parsed",
                                          "verified", "mean reward", "p(fast)", "flags (trained | untrained)"));
    for (const auto& r : sc.rounds) {
      std::string label = absl::StrCat(r.label, r.evaluation ? " *" : "");
      if (r.coupled > 0 && r.identical == r.coupled) absl::StrAppend(&label, " A/A");
      absl::StrAppend(&out, absl::StrFormat("  %-18s %6.2f vs %5.2f %6.0f%% vs %3.0f%% %6.0f%% vs %3.0f%% %6.2f vs %5.2f "
                                            "%4s vs %4s  %s | %s\n",
                                            label, r.trained.F(), r.twin.F(), 100 * r.trained.parsed_share(),
                                            100 * r.twin.parsed_share(), 100 * r.trained.verified_share(),
                                            100 * r.twin.verified_share(), r.trained.mean_reward(),
                                            r.twin.mean_reward(), PFast(r.trained), PFast(r.twin),
                                            Flags(r.trained.flags), Flags(r.twin.flags)));
    }
  }
  absl::StrAppend(&out, absl::StrFormat(
                            "Δ = %+.3f, 95%% CI [%+.3f, %+.3f] over %d seed(s) (bootstrap: seeds, then tasks); "
                            "sign test on coupled samples %d : %d, p = %.3g; verified share %+.1f points\n",
                            s.delta, s.ci_low, s.ci_high, static_cast<int>(s.seeds.size()), s.sign_plus,
                            s.sign_minus, s.sign_p, 100 * s.verified_gap));
  absl::StrAppend(&out, "(* evaluation rounds; A/A: the same completions on both sides)\n");
  return out;
}

}  // namespace crl::report
