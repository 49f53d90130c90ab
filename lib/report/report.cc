#include "lib/report/report.h"

#include <cmath>
#include <filesystem>
#include <limits>
#include <map>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/file.h"
#include "common/status.h"
#include "lib/hacks/hack_case.h"
#include "lib/kernelbench/results.h"
#include "lib/report/chart.h"
#include "lib/report/learning.h"
#include "lib/reward/names.h"
#include "lib/stats/stats.h"

namespace crl::report {
namespace {

namespace fs = std::filesystem;
constexpr uint32_t kTrained = 0x1f77b4, kUntrained = 0x9a9a9a;
constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
const uint32_t kOutcomeColors[kOutcomes] = {0xc7c7c7, 0xff9896, 0xd62728, 0x8c564b,
                                            0xffbb78, 0x98df8a, 0x2ca02c, 0x555555};

std::string Html(const std::string& s) { return HtmlText(s); }

// The rounds shown: the trained run's, then any the twin has beyond them.
std::vector<std::string> RoundLabels(const RunSummary& t, const RunSummary* u) {
  std::vector<std::string> labels;
  for (const auto& r : t.rounds) labels.push_back(r.label);
  if (u) {
    for (const auto& r : u->rounds) {
      if (std::find(labels.begin(), labels.end(), r.label) == labels.end()) labels.push_back(r.label);
    }
  }
  return labels;
}

std::vector<double> PerRound(const RunSummary& s, const std::vector<std::string>& labels,
                             double RoundStats::*field) {
  std::vector<double> out;
  for (const auto& l : labels) {
    double v = kNone;
    for (const auto& r : s.rounds) {
      if (r.label == l) v = r.*field;
    }
    out.push_back(v);
  }
  return out;
}

struct Sides {
  const RunSummary& trained;
  const RunSummary* untrained;
};

Chart RewardChart(const Sides& s, const std::vector<std::string>& labels) {
  Chart c;
  c.title = "Mean reward per round";
  c.y_title = "mean reward";
  c.x_labels = labels;
  c.series.push_back({"trained", PerRound(s.trained, labels, &RoundStats::mean_reward), kTrained});
  if (s.untrained) {
    c.series.push_back({"untrained (same start, training off)", PerRound(*s.untrained, labels, &RoundStats::mean_reward),
                        kUntrained});
  }
  c.y_min = 0;
  return c;
}

Chart SharesChart(const Sides& s, const std::vector<std::string>& labels) {
  Chart c;
  c.title = "Share verified (solid) and faster than the reference (dashed), per round";
  c.x_labels = labels;
  c.percent = true;
  c.y_max = 1;
  c.series.push_back({"verified (trained)", PerRound(s.trained, labels, &RoundStats::verified_share), kTrained});
  c.series.push_back({"faster (trained)", PerRound(s.trained, labels, &RoundStats::faster_share), kTrained, 0, true});
  if (s.untrained) {
    c.series.push_back({"verified (untrained)", PerRound(*s.untrained, labels, &RoundStats::verified_share), kUntrained});
    c.series.push_back({"faster (untrained)", PerRound(*s.untrained, labels, &RoundStats::faster_share), kUntrained,
                        0, true});
  }
  return c;
}

// F per sampled round with its 95% Wilson interval, both sides.
Chart FChart(const SeedComparison& pair, bool has_twin) {
  Chart c;
  c.title = "F: share verified and trusted faster than the reference, per round (95% CI)";
  c.percent = true;
  c.y_max = 1;
  Series trained{"trained", {}, kTrained}, twin{"untrained (same start, training off)", {}, kUntrained};
  for (const RoundPair& r : pair.rounds) {
    c.x_labels.push_back(r.coupled > 0 && r.identical == r.coupled ? r.label + " (A/A)" : r.label);
    for (auto [series, side] : {std::pair<Series*, const SideRound*>{&trained, &r.trained}, {&twin, &r.twin}}) {
      const bool any = side->samples > 0;
      series->values.push_back(any ? side->F() : kNone);
      series->low.push_back(any ? side->F_low() : kNone);
      series->high.push_back(any ? side->F_high() : kNone);
    }
  }
  c.series.push_back(std::move(trained));
  if (has_twin) c.series.push_back(std::move(twin));
  return c;
}

Chart VerdictChart(const Sides& s, const std::vector<std::string>& labels) {
  Chart c;
  c.kind = Chart::Kind::kStackedBars;
  c.title = "What became of the candidates, per round";
  c.y_title = "candidates";
  c.x_labels = labels;
  c.group_names = {"trained"};
  if (s.untrained) c.group_names.push_back("untrained");
  for (int side = 0; side < (s.untrained ? 2 : 1); ++side) {
    const RunSummary& r = side == 0 ? s.trained : *s.untrained;
    for (int o = 0; o < kOutcomes; ++o) {
      Series series{OutcomeName(static_cast<Outcome>(o)), {}, kOutcomeColors[o], side};
      for (const auto& l : labels) {
        double v = kNone;
        for (const auto& rs : r.rounds) {
          if (rs.label == l) v = rs.outcomes[o];
        }
        series.values.push_back(v);
      }
      c.series.push_back(series);
    }
  }
  return c;
}

Chart SpeedupChart(const Sides& s) {
  static const std::vector<double> kEdges = {0.5, 0.8, 1.0, 1.25, 1.5, 2.0, 4.0};
  Chart c;
  c.kind = Chart::Kind::kBars;
  c.title = "Speedups of verified, trusted candidates";
  c.x_title = "speedup over the reference";
  c.y_title = "candidates";
  c.x_labels.push_back("< 0.5");
  for (size_t i = 0; i + 1 < kEdges.size(); ++i) {
    c.x_labels.push_back(absl::StrFormat("%g-%g", kEdges[i], kEdges[i + 1]));
  }
  c.x_labels.push_back("> 4");
  auto histogram = [&](const std::vector<double>& v) {
    std::vector<double> h(kEdges.size() + 1, 0);
    for (double x : v) h[std::upper_bound(kEdges.begin(), kEdges.end(), x) - kEdges.begin()] += 1;
    return h;
  };
  c.series.push_back({"trained", histogram(s.trained.speedups), kTrained});
  if (s.untrained) c.series.push_back({"untrained", histogram(s.untrained->speedups), kUntrained});
  return c;
}

Chart BestPerTaskChart(const Sides& s) {
  Chart c;
  c.kind = Chart::Kind::kBars;
  c.title = "Best trusted speedup per task (0: none verified)";
  c.y_title = "speedup";
  c.reference_lines = {1.0};
  std::vector<double> t, u;
  for (const auto& task : s.trained.tasks) {
    c.x_labels.push_back(task.task);
    t.push_back(task.best_speedup);
    double b = 0;
    if (s.untrained) {
      for (const auto& x : s.untrained->tasks) {
        if (x.task == task.task) b = x.best_speedup;
      }
    }
    u.push_back(b);
  }
  c.series.push_back({"trained", t, kTrained});
  if (s.untrained) c.series.push_back({"untrained", u, kUntrained});
  return c;
}

Chart FastPChart(const Sides& s) {
  Chart c;
  c.kind = Chart::Kind::kBars;
  c.title = "fast_p: share of tasks with a verified variant faster than p";
  c.percent = true;
  c.y_max = 1;
  std::vector<double> t, u;
  for (double p : kb::FastPThresholds()) {
    c.x_labels.push_back(kb::FastPKey(p));
    t.push_back(s.trained.fast_p.at(kb::FastPKey(p)));
    if (s.untrained) u.push_back(s.untrained->fast_p.at(kb::FastPKey(p)));
  }
  c.series.push_back({"trained", t, kTrained});
  if (s.untrained) c.series.push_back({"untrained", u, kUntrained});
  return c;
}

std::string Percent(double v) { return absl::StrFormat("%.0f%%", v * 100); }

std::string RoundsTable(const Sides& s, const std::vector<std::string>& labels) {
  std::string h = "<table><tr><th>round</th><th>candidates</th><th>mean reward</th><th>verified</th><th>faster</th>"
                  "<th>best speedup</th><th>policy versions</th></tr>\n";
  auto row = [&](const RunSummary& r, const std::string& label, const char* side) {
    for (const auto& rs : r.rounds) {
      if (rs.label != label) continue;
      absl::StrAppendFormat(&h, "<tr class=\"%s\"><td>%s (%s)</td><td>%d</td><td>%.3f</td><td>%s</td><td>%s</td>"
                                "<td>%.2fx</td><td>%s</td></tr>\n",
                            side, Html(label), side, rs.candidates, rs.mean_reward, Percent(rs.verified_share),
                            Percent(rs.faster_share), rs.best_speedup, Html(absl::StrJoin(rs.policy_versions, " ")));
    }
  };
  for (const auto& l : labels) {
    row(s.trained, l, "trained");
    if (s.untrained) row(*s.untrained, l, "untrained");
  }
  return h + "</table>\n";
}

// The run's candidates that the hack database records (lib/hacks): what
// caught them, and what a judge said. `crl hacks list` has every run's.
std::string HacksSection(const std::vector<v1::Variant>& variants) {
  std::map<std::string, int> by_kind;
  std::string rows;
  int n = 0;
  for (const auto& v : variants) {
    const std::vector<std::string> kinds = hacks::Kinds(v);
    if (kinds.empty()) continue;
    ++n;
    for (const auto& k : kinds) ++by_kind[k];
    absl::StrAppend(&rows, "<tr><td>", Html(v.key()), "</td><td>", Html(v.task_name()), "</td><td>",
                    Html(absl::StrJoin(kinds, ", ")), "</td><td>", Html(crl::VerdictShortName(v.verdict())), "</td><td>",
                    absl::StrFormat("%.2fx", v.speedup()), "</td><td>", Html(v.judgement().decision()), "</td></tr>\n");
  }
  if (n == 0) return "<p>No candidate of this run was caught cheating (no cheating flag or reason).</p>\n";
  std::vector<std::string> counts;
  for (const auto& [k, c] : by_kind) counts.push_back(absl::StrCat(k, " ", c));
  return absl::StrCat("<p>", n, " candidate(s) caught: ", Html(absl::StrJoin(counts, ", ")),
                      ". Each is a case in the hack database (<code>crl hacks list</code>).</p>\n<table><tr><th>variant"
                      "</th><th>task</th><th>kinds</th><th>verdict</th><th>speedup</th><th>judge</th></tr>\n",
                      rows, "</table>\n");
}

std::string TasksTable(const Sides& s) {
  std::string h = "<table><tr><th>task</th><th>candidates</th><th>verified</th><th>best trusted speedup</th>";
  if (s.untrained) h += "<th>untrained: verified</th><th>untrained: best</th>";
  h += "</tr>\n";
  for (const auto& t : s.trained.tasks) {
    absl::StrAppendFormat(&h, "<tr><td>%s</td><td>%d</td><td>%d</td><td>%.2fx</td>", Html(t.task), t.candidates,
                          t.verified, t.best_speedup);
    if (s.untrained) {
      TaskStats u;
      for (const auto& x : s.untrained->tasks) {
        if (x.task == t.task) u = x;
      }
      absl::StrAppendFormat(&h, "<td>%d</td><td>%.2fx</td>", u.verified, u.best_speedup);
    }
    h += "</tr>\n";
  }
  return h + "</table>\n";
}

std::string FastPTable(const Sides& s) {
  std::string h = "<table><tr><th></th>";
  for (double p : kb::FastPThresholds()) absl::StrAppend(&h, "<th>", kb::FastPKey(p), "</th>");
  h += "<th>geomean speedup</th></tr>\n";
  auto row = [&](const RunSummary& r, const char* side) {
    absl::StrAppend(&h, "<tr><td>", side, "</td>");
    for (double p : kb::FastPThresholds()) absl::StrAppend(&h, "<td>", Percent(r.fast_p.at(kb::FastPKey(p))), "</td>");
    absl::StrAppendFormat(&h, "<td>%.2fx</td></tr>\n", stats::GeometricMean(r.speedups));
  };
  row(s.trained, "trained");
  if (s.untrained) row(*s.untrained, "untrained");
  return h + "</table>\n";
}

std::string SpecText(const v1::Run& run) {
  const v1::RunSpec& spec = run.spec();
  std::vector<std::string> tasks, stages;
  for (const auto& t : spec.tasks()) tasks.push_back(t.name());
  for (const auto& st : spec.stages()) stages.push_back(absl::StrCat(st.kind(), " x", st.rounds()));
  return absl::StrCat("tasks: ", absl::StrJoin(tasks, ", "), "; stages: ", absl::StrJoin(stages, ", "),
                      "; group size ", spec.group_size(), "; seed ", spec.seed(), "; training: ",
                      spec.training().empty() ? "on" : spec.training());
}

// One point per policy step, in step order (a step recorded twice, as by a
// resumed run, counts once: the last record).
std::vector<v1::RunEvent> TrainingCurve(const std::vector<v1::RunEvent>& events) {
  std::map<int64_t, v1::RunEvent> by_step;
  for (const auto& e : events) {
    if (e.kind() == "training") by_step[e.policy_step()] = e;
  }
  std::vector<v1::RunEvent> out;
  for (auto& [step, e] : by_step) out.push_back(std::move(e));
  return out;
}

Chart TrainingChart(const std::vector<v1::RunEvent>& curve) {
  Chart c;
  c.title = "Training: the trainer's last step at each sync";
  c.x_title = "policy step";
  std::vector<double> loss, kl, entropy, grad;
  for (const auto& e : curve) {
    c.x_labels.push_back(absl::StrCat(e.policy_step()));
    loss.push_back(e.training().loss());
    kl.push_back(e.training().kl());
    entropy.push_back(e.training().entropy());
    grad.push_back(e.training().grad_norm());
  }
  c.series = {{"loss", loss, kTrained}, {"KL", kl, 0xd62728}, {"entropy (nats)", entropy, 0x2ca02c},
              {"grad norm", grad, 0xff7f0e, 0, true}};
  for (const auto& s : c.series) {
    for (double v : s.values) c.y_min = std::min(c.y_min, v);
  }
  return c;
}

std::string TrainingTable(const std::vector<v1::RunEvent>& curve) {
  std::string h = "<table><tr><th>policy step</th><th>objective</th><th>loss</th><th>KL</th><th>entropy</th>"
                  "<th>grad norm</th><th>learning rate</th><th>reward mean</th><th>reward std</th>"
                  "<th>sequences</th><th>tokens</th><th>seconds</th></tr>\n";
  for (const auto& e : curve) {
    const v1::TrainStepStats& t = e.training();
    absl::StrAppendFormat(&h, "<tr><td>%d</td><td>%s</td><td>%.4g</td><td>%.4g</td><td>%.4g</td><td>%.4g</td>"
                              "<td>%.3g</td><td>%.4g</td><td>%.4g</td><td>%d</td><td>%d</td><td>%.1f</td></tr>\n",
                          e.policy_step(), Html(t.objective()), t.loss(), t.kl(), t.entropy(), t.grad_norm(),
                          t.learning_rate(), t.reward_mean(), t.reward_std(), t.sequences(), t.trained_tokens(),
                          t.seconds());
  }
  return h + "</table>\n";
}

nlohmann::json TrainingJson(const std::vector<v1::RunEvent>& curve) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& e : curve) {
    const v1::TrainStepStats& t = e.training();
    out.push_back({{"policy_step", e.policy_step()}, {"objective", t.objective()}, {"loss", t.loss()},
                   {"kl", t.kl()}, {"entropy", t.entropy()}, {"grad_norm", t.grad_norm()},
                   {"learning_rate", t.learning_rate()}, {"reward_mean", t.reward_mean()},
                   {"reward_std", t.reward_std()}, {"sequences", t.sequences()},
                   {"trained_tokens", t.trained_tokens()}, {"seconds", t.seconds()}});
  }
  return out;
}

}  // namespace

const std::vector<std::string>& PlotFiles() {
  static const std::vector<std::string> kFiles = {"f_per_round.png", "reward_per_round.png", "shares_per_round.png",
                                                  "verdicts_per_round.png", "speedups.png",
                                                  "best_per_task.png", "fast_p.png"};
  return kFiles;
}

absl::StatusOr<std::vector<std::string>> WriteReport(const ReportInput& in, const std::string& out_dir) {
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) return absl::FailedPreconditionError(absl::StrCat(out_dir, ": cannot create: ", ec.message()));
  const RunSummary trained = Summarize(in.run, in.variants);
  RunSummary twin;
  if (in.has_twin) twin = Summarize(in.twin, in.twin_variants);
  const Sides sides{trained, in.has_twin ? &twin : nullptr};
  const std::vector<std::string> labels = RoundLabels(trained, sides.untrained);

  SeedRuns pair;
  pair.seed = in.run.spec().seed();
  pair.trained = in.variants;
  if (in.has_twin) pair.twin = in.twin_variants;
  const LearningSummary learning = CompareSeeds({pair}, {}, {});
  const SeedComparison& compared = learning.seeds.front();
  const std::vector<Chart> charts = {FChart(compared, in.has_twin), RewardChart(sides, labels), SharesChart(sides, labels),
                                     VerdictChart(sides, labels), SpeedupChart(sides),
                                     BestPerTaskChart(sides), FastPChart(sides)};
  std::vector<std::string> written;
  auto embed = [&](const Chart& chart, const std::string& file, std::string* html) -> absl::Status {
    const std::string path = (fs::path(out_dir) / file).string();
    CRL_RETURN_IF_ERROR(WritePng(chart, path));
    written.push_back(path);
    CRL_ASSIGN_OR_RETURN(std::string png, ReadFileToString(path, "plot"));
    absl::StrAppend(html, "<figure><img alt=\"", Html(chart.title), "\" src=\"data:image/png;base64,",
                    absl::Base64Escape(png), "\"></figure>\n");
    return absl::OkStatus();
  };
  std::string images;
  for (size_t i = 0; i < charts.size(); ++i) CRL_RETURN_IF_ERROR(embed(charts[i], PlotFiles()[i], &images));
  const std::vector<v1::RunEvent> curve = TrainingCurve(in.training);
  std::string training = "<p>No training step was recorded for this run (training off, or no sync yet).</p>\n";
  if (!curve.empty()) {
    training.clear();
    CRL_RETURN_IF_ERROR(embed(TrainingChart(curve), "training.png", &training));
    absl::StrAppend(&training, TrainingTable(curve));
  }
  std::string text = SummaryText(trained, sides.untrained);
  if (in.has_twin) {
    absl::StrAppend(&text, "\n", LearningText(learning, "Trained against untrained, this seed (the CI resamples tasks; "
                                                           "crl quickstart --seeds N resamples seeds too):"));
  }
  nlohmann::json summary = SummaryJson(trained, sides.untrained);
  if (!curve.empty()) summary["training_curve"] = TrainingJson(curve);
  const std::string json = summary.dump(2) + "\n";
  std::string html = absl::StrCat(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>crl run ", Html(in.run.run_id()),
      "</title>\n<style>body{font-family:sans-serif;max-width:1000px;margin:2em auto;color:#222}"
      "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}"
      "td:first-child,th:first-child{text-align:left}tr.untrained{color:#777}figure{margin:1em 0}"
      "img{max-width:100%}pre{background:#f6f6f6;padding:1em;overflow-x:auto}</style></head><body>\n",
      "<h1>Run ", Html(in.run.spec().name().empty() ? in.run.run_id() : in.run.spec().name()), "</h1>\n<p>run <code>",
      Html(in.run.run_id()), "</code>, ", Html(v1::RunState_Name(in.run.state())), "; ", Html(SpecText(in.run)),
      "</p>\n");
  if (in.has_twin) {
    absl::StrAppend(&html, "<p>Beside it, in grey: run <code>", Html(in.twin.run_id()),
                    "</code>, the same spec with training off (the same starting policy, seed and prompt "
                    "template; its prompts show its own earlier variants). Whatever separates the two curves "
                    "is what training did.</p>\n");
  }
  absl::StrAppend(&html, "<pre>", Html(text), "</pre>\n", images, "<h2>Rounds</h2>\n", RoundsTable(sides, labels),
                  "<h2>Training</h2>\n", training, "<h2>Tasks</h2>\n", TasksTable(sides), "<h2>fast_p</h2>\n", FastPTable(sides),
                  "<h2>Hacks caught</h2>\n", HacksSection(in.variants),
                  "<p>Verified: passed the correctness checks on hidden inputs. Trusted: verified and timed "
                  "without a trust flag (a flagged timing earns no reward and counts as no speedup). Faster: "
                  "trusted with a speedup above 1. Shares are over the candidates minus infrastructure "
                  "failures, which are not the model's outcome.</p>\n</body></html>\n");
  for (const auto& [name, content] : {std::pair<std::string, const std::string*>{"report.html", &html},
                                      {"summary.json", &json},
                                      {"summary.txt", &text}}) {
    const std::string path = (fs::path(out_dir) / name).string();
    CRL_RETURN_IF_ERROR(WriteStringToFile(path, *content));
    written.push_back(path);
  }
  return written;
}

}  // namespace crl::report
