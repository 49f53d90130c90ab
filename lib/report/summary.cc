#include "lib/report/summary.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <tuple>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "lib/kernelbench/results.h"
#include "lib/reward/names.h"
#include "lib/stats/stats.h"

namespace crl::report {
namespace {

using nlohmann::json;

double Share(int n, int of) { return of > 0 ? static_cast<double>(n) / of : 0.0; }

json RoundJson(const RoundStats& r) {
  json mix = json::object();
  for (int o = 0; o < kOutcomes; ++o) mix[OutcomeName(static_cast<Outcome>(o))] = r.outcomes[o];
  return {{"label", r.label},
          {"stage", r.stage},
          {"stage_index", r.stage_index},
          {"round", r.round + 1},
          {"candidates", r.candidates},
          {"outcomes", mix},
          {"rewarded", r.rewarded},
          {"mean_reward", r.mean_reward},
          {"verified_share", r.verified_share},
          {"faster_share", r.faster_share},
          {"best_speedup", r.best_speedup},
          {"policy_versions", r.policy_versions}};
}

json RunJson(const RunSummary& s) {
  json rounds = json::array(), tasks = json::array(), mix = json::object();
  for (const auto& r : s.rounds) rounds.push_back(RoundJson(r));
  for (const auto& t : s.tasks) {
    tasks.push_back({{"task", t.task}, {"candidates", t.candidates}, {"verified", t.verified},
                     {"best_speedup", t.best_speedup}});
  }
  for (int o = 0; o < kOutcomes; ++o) mix[OutcomeName(static_cast<Outcome>(o))] = s.outcomes[o];
  return {{"run_id", s.run_id},       {"name", s.name},
          {"state", s.state},         {"training", s.training},
          {"candidates", s.candidates}, {"outcomes", mix},
          {"mean_reward", s.mean_reward}, {"fast_p", s.fast_p},
          {"speedups", s.speedups},   {"geomean_speedup", stats::GeometricMean(s.speedups)},
          {"rounds", rounds},         {"tasks", tasks}};
}

const RoundStats* FindRound(const RunSummary* s, const std::string& label) {
  if (!s) return nullptr;
  for (const auto& r : s->rounds) {
    if (r.label == label) return &r;
  }
  return nullptr;
}

}  // namespace

bool KeyStageRound(const std::string& key, int* stage_index, int* round) {
  std::vector<std::string> parts = absl::StrSplit(key, '/');
  if (parts.size() < 2 || parts[0].size() < 2 || parts[1].size() < 2 || parts[0][0] != 's' ||
      parts[1][0] != 'r') {
    return false;
  }
  return absl::SimpleAtoi(parts[0].substr(1), stage_index) && absl::SimpleAtoi(parts[1].substr(1), round);
}

const char* OutcomeName(Outcome o) {
  switch (o) {
    case Outcome::kRejected: return "rejected";
    case Outcome::kCompileError: return "compile error";
    case Outcome::kWrongAnswer: return "wrong answer";
    case Outcome::kFailed: return "crashed or timed out";
    case Outcome::kFlagged: return "verified, flagged";
    case Outcome::kVerified: return "verified, not faster";
    case Outcome::kFaster: return "verified, faster";
    case Outcome::kInfra: return "infrastructure failure";
  }
  return "?";
}

const char* OutcomeLabel(Outcome o) {
  switch (o) {
    case Outcome::kRejected: return "rejected";
    case Outcome::kCompileError: return "compile_error";
    case Outcome::kWrongAnswer: return "wrong_answer";
    case Outcome::kFailed: return "crashed_or_timed_out";
    case Outcome::kFlagged: return "verified_flagged";
    case Outcome::kVerified: return "verified_not_faster";
    case Outcome::kFaster: return "verified_faster";
    case Outcome::kInfra: return "infrastructure_failure";
  }
  return "unknown";
}

bool Trusted(const v1::Variant& v) {
  if (v.verdict() != v1::VERDICT_OK || v.reward().status() != v1::REWARD_STATUS_OK) return false;
  for (int f : v.flags()) {
    if (IsTrustFlag(static_cast<v1::Flag>(f))) return false;
  }
  return true;
}

Outcome OutcomeOf(const v1::Variant& v) {
  if (v.infra_failure() || v.verdict() == v1::VERDICT_INFRA_ERROR) return Outcome::kInfra;
  if (v.parse_error() != v1::PARSE_ERROR_UNSPECIFIED) return Outcome::kRejected;
  switch (v.verdict()) {
    case v1::VERDICT_OK:
      if (!Trusted(v)) return Outcome::kFlagged;
      return v.speedup() > 1 ? Outcome::kFaster : Outcome::kVerified;
    case v1::VERDICT_COMPILE_ERROR: return Outcome::kCompileError;
    case v1::VERDICT_WRONG_ANSWER: return Outcome::kWrongAnswer;
    default: return Outcome::kFailed;
  }
}

RunSummary Summarize(const v1::Run& run, const std::vector<v1::Variant>& variants) {
  RunSummary s;
  s.run_id = run.run_id();
  s.name = run.spec().name();
  s.state = v1::RunState_Name(run.state());
  s.training = run.spec().training() != "none";
  std::map<std::tuple<int, int>, RoundStats> rounds;
  std::map<std::string, TaskStats> tasks;
  double reward_sum = 0;
  int rewarded = 0;
  for (const v1::Variant& v : variants) {
    if (!v.scored()) continue;
    int si = 0, r = v.round();
    if (!KeyStageRound(v.key(), &si, &r)) si = 0;
    RoundStats& rs = rounds[{si, r}];
    rs.stage = v.stage();
    rs.stage_index = si;
    rs.round = r;
    rs.label = absl::StrCat(v.stage().empty() ? "round" : v.stage(), " ", r + 1);
    const Outcome o = OutcomeOf(v);
    ++rs.candidates;
    ++rs.outcomes[static_cast<int>(o)];
    ++s.candidates;
    ++s.outcomes[static_cast<int>(o)];
    if (!v.policy_version().empty() &&
        std::find(rs.policy_versions.begin(), rs.policy_versions.end(), v.policy_version()) ==
            rs.policy_versions.end()) {
      rs.policy_versions.push_back(v.policy_version());
    }
    if (v.reward().status() == v1::REWARD_STATUS_OK && o != Outcome::kInfra) {
      ++rs.rewarded;
      rs.mean_reward += v.reward().reward();  // a sum until the end
      reward_sum += v.reward().reward();
      ++rewarded;
    }
    TaskStats& ts = tasks[v.task_name()];
    ts.task = v.task_name();
    ++ts.candidates;
    if (v.verdict() == v1::VERDICT_OK && o != Outcome::kInfra) ++ts.verified;
    if (Trusted(v) && stats::IsPositiveFinite(v.speedup())) {
      ts.best_speedup = std::max(ts.best_speedup, v.speedup());
      rs.best_speedup = std::max(rs.best_speedup, v.speedup());
      s.speedups.push_back(v.speedup());
    }
  }
  for (auto& [key, rs] : rounds) {
    const int infra = rs.outcomes[static_cast<int>(Outcome::kInfra)];
    const int judged = rs.candidates - infra;
    const int verified = rs.outcomes[static_cast<int>(Outcome::kVerified)] +
                         rs.outcomes[static_cast<int>(Outcome::kFaster)] +
                         rs.outcomes[static_cast<int>(Outcome::kFlagged)];
    rs.verified_share = Share(verified, judged);
    rs.faster_share = Share(rs.outcomes[static_cast<int>(Outcome::kFaster)], judged);
    rs.mean_reward = rs.rewarded > 0 ? rs.mean_reward / rs.rewarded : 0.0;
    s.rounds.push_back(rs);
  }
  s.mean_reward = rewarded > 0 ? reward_sum / rewarded : 0.0;
  // Tasks in the spec's order (a task with no candidates yet shows as 0),
  // then any other task the variants name.
  std::set<std::string> listed;
  for (const auto& t : run.spec().tasks()) {
    auto it = tasks.find(t.name());
    TaskStats ts = it != tasks.end() ? it->second : TaskStats{t.name()};
    s.tasks.push_back(ts);
    listed.insert(t.name());
  }
  for (const auto& [name, ts] : tasks) {
    if (!listed.count(name)) s.tasks.push_back(ts);
  }
  // fast_p as KernelBench defines it: the share of tasks whose best
  // trusted variant is faster than p (fast_0: verified at all).
  for (double p : kb::FastPThresholds()) {
    int n = 0;
    for (const auto& t : s.tasks) n += t.best_speedup > p;
    s.fast_p[kb::FastPKey(p)] = Share(n, static_cast<int>(s.tasks.size()));
  }
  std::sort(s.speedups.begin(), s.speedups.end());
  return s;
}

json SummaryJson(const RunSummary& trained, const RunSummary* untrained) {
  json side_by_side = json::array();
  for (const auto& r : trained.rounds) {
    const RoundStats* u = FindRound(untrained, r.label);
    json row = {{"label", r.label},
                {"trained", {{"mean_reward", r.mean_reward}, {"verified_share", r.verified_share},
                             {"faster_share", r.faster_share}, {"candidates", r.candidates}}}};
    row["untrained"] = u ? json{{"mean_reward", u->mean_reward}, {"verified_share", u->verified_share},
                                {"faster_share", u->faster_share}, {"candidates", u->candidates}}
                         : json(nullptr);
    side_by_side.push_back(row);
  }
  return {{"trained", RunJson(trained)},
          {"untrained", untrained ? RunJson(*untrained) : json(nullptr)},
          {"rounds", side_by_side}};
}

std::string SummaryText(const RunSummary& trained, const RunSummary* untrained) {
  std::string out;
  auto side = [&](const RunSummary& s, const char* what) {
    const int verified = s.outcomes[static_cast<int>(Outcome::kVerified)] +
                         s.outcomes[static_cast<int>(Outcome::kFaster)] +
                         s.outcomes[static_cast<int>(Outcome::kFlagged)];
    absl::StrAppendFormat(&out, "%-10s run %s (%s): %d candidates, %d verified, %d faster, mean reward %.3f",
                          what, s.run_id, s.state, s.candidates, verified,
                          s.outcomes[static_cast<int>(Outcome::kFaster)], s.mean_reward);
    absl::StrAppendFormat(&out, ", fast_1 %.2f, geomean speedup %.2fx\n", s.fast_p.at(kb::FastPKey(1)),
                          stats::GeometricMean(s.speedups));
  };
  side(trained, trained.training ? "trained" : "untrained");
  if (untrained) side(*untrained, "untrained");
  absl::StrAppendFormat(&out, "%-22s %21s %21s %21s\n", "round", "mean reward", "verified", "faster");
  for (const auto& r : trained.rounds) {
    const RoundStats* u = FindRound(untrained, r.label);
    auto cell = [&](double t, const double* b, bool percent) {
      const double k = percent ? 100.0 : 1.0;
      return b ? absl::StrFormat(percent ? "%6.0f%% vs %6.0f%%" : "%7.3f vs %7.3f", t * k, *b * k)
               : absl::StrFormat(percent ? "%6.0f%%" : "%7.3f", t * k);
    };
    absl::StrAppendFormat(&out, "%-22s %21s %21s %21s\n", r.label,
                          cell(r.mean_reward, u ? &u->mean_reward : nullptr, false),
                          cell(r.verified_share, u ? &u->verified_share : nullptr, true),
                          cell(r.faster_share, u ? &u->faster_share : nullptr, true));
  }
  if (untrained) out += "(trained vs untrained: same starting policy, same seed, same prompts)\n";
  return out;
}

}  // namespace crl::report
