#include "lib/report/port.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/file.h"
#include "common/status.h"
#include "lib/report/chart.h"
#include "lib/reward/names.h"
#include "lib/stats/stats.h"

namespace crl::report {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

PortResult ResultOf(const json& j, const std::string& verdict_key) {
  PortResult r;
  r.verdict = j.value(verdict_key, std::string("UNKNOWN"));
  if (j.contains("flags") && j["flags"].is_array()) {
    for (const auto& f : j["flags"]) {
      if (f.is_string()) r.flags.push_back(f.get<std::string>());
    }
  }
  bool trusted = r.verdict == "OK";
  for (const auto& f : r.flags) trusted = trusted && !IsTrustFlagName(f);
  if (trusted && j.contains("speedup") && j["speedup"].is_number()) {
    const double s = j["speedup"].get<double>();
    if (std::isfinite(s) && s > 0) r.speedup = s;
  }
  return r;
}

std::string Speedup(const std::optional<double>& s) { return s ? absl::StrFormat("%.2fx", *s) : "-"; }

}  // namespace

absl::StatusOr<PortSet> ReadPortSet(const std::string& path) {
  CRL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path, "results"));
  const json j = json::parse(text, nullptr, false);
  if (!j.is_object()) return absl::InvalidArgumentError(absl::StrCat(path, ": not a JSON object"));
  PortSet set;
  if (j.contains("config") && j["config"].contains("provenance")) set.provenance = j["config"]["provenance"];
  if (!set.provenance.is_object()) set.provenance = json::object();
  const std::string gpu = set.provenance.value("gpu", std::string());
  // The GPU and the file: two machines of one kind stay apart.
  const std::string stem = fs::path(path).stem().string();
  set.label = !gpu.empty() ? absl::StrCat(gpu, " (", stem, ")") : stem;
  if (j.contains("rows") && j["rows"].is_array()) {  // crl bench --cuda-l1
    for (const auto& row : j["rows"]) {
      if (!row.contains("level_id") || !row.contains("task_id")) {
        return absl::InvalidArgumentError(absl::StrCat(path, ": a row without level_id and task_id"));
      }
      set.results[absl::StrCat("L", row["level_id"].get<int>(), "/", row["task_id"].get<int>())] =
          ResultOf(row, "status");
    }
  } else {
    for (const auto& [level, problems] : j.items()) {
      if (level.rfind("level", 0) != 0 || !problems.is_object()) continue;
      for (const auto& [problem, samples] : problems.items()) {
        if (!samples.is_object()) continue;
        for (const auto& [sample, r] : samples.items()) {
          set.results[absl::StrCat("L", level.substr(5), "/", problem, "/", sample)] = ResultOf(r, "verdict");
        }
      }
    }
  }
  if (set.results.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": no results (neither `rows` of crl bench --cuda-l1 nor `levelN` of crl bench)"));
  }
  return set;
}

absl::StatusOr<PortReport> ComparePorts(const std::vector<PortSet>& sets) {
  if (sets.size() < 2) return absl::InvalidArgumentError("a port report compares at least two result sets");
  PortReport out;
  std::set<std::string> keys;
  for (const auto& s : sets) {
    for (const auto& [k, r] : s.results) keys.insert(k);
  }
  const size_t n = sets.size();
  std::vector<std::vector<double>> trusted(n);
  std::vector<std::vector<double>> common(n);
  for (const auto& key : keys) {
    PortRow row;
    row.key = key;
    row.ratio.assign(n, std::nullopt);
    row.stops_correct.assign(n, false);
    row.loses_speedup.assign(n, false);
    bool everywhere = true;
    for (size_t i = 0; i < n; ++i) {
      auto it = sets[i].results.find(key);
      if (it == sets[i].results.end()) {
        row.on.push_back(std::nullopt);
        everywhere = false;
        continue;
      }
      row.on.push_back(it->second);
      if (it->second.speedup) trusted[i].push_back(*it->second.speedup);
      everywhere = everywhere && it->second.speedup.has_value();
    }
    if (everywhere) {
      for (size_t i = 0; i < n; ++i) common[i].push_back(*row.on[i]->speedup);
    }
    const auto& first = row.on[0];
    for (size_t i = 1; i < n && first; ++i) {
      if (!row.on[i]) continue;
      if (first->speedup && row.on[i]->speedup) row.ratio[i] = *row.on[i]->speedup / *first->speedup;
      row.stops_correct[i] = first->verdict == "OK" && row.on[i]->verdict != "OK";
      row.loses_speedup[i] = first->speedup && *first->speedup > 1 && !(row.on[i]->speedup && *row.on[i]->speedup > 1);
    }
    out.rows.push_back(std::move(row));
  }
  for (size_t i = 0; i < n; ++i) {
    PortMachine m;
    m.label = sets[i].label;
    m.candidates = static_cast<int>(sets[i].results.size());
    for (const auto& [k, r] : sets[i].results) m.correct += r.verdict == "OK";
    m.trusted = static_cast<int>(trusted[i].size());
    m.mean = stats::Mean(trusted[i]);
    m.median = stats::Median(trusted[i]);
    m.geomean = stats::GeometricMean(trusted[i]);
    m.common = static_cast<int>(common[i].size());
    m.common_mean = stats::Mean(common[i]);
    m.common_geomean = stats::GeometricMean(common[i]);
    out.machines.push_back(m);
  }
  return out;
}

json PortReportJson(const PortReport& report, const std::vector<PortSet>& sets) {
  json j;
  j["machines"] = json::array();
  for (size_t i = 0; i < report.machines.size(); ++i) {
    const PortMachine& m = report.machines[i];
    j["machines"].push_back({{"label", m.label},
                             {"provenance", sets[i].provenance},
                             {"candidates", m.candidates},
                             {"correct", m.correct},
                             {"trusted", m.trusted},
                             {"mean_speedup", m.mean},
                             {"median_speedup", m.median},
                             {"geomean_speedup", m.geomean},
                             {"common", m.common},
                             {"common_mean_speedup", m.common_mean},
                             {"common_geomean_speedup", m.common_geomean}});
  }
  j["rows"] = json::array();
  for (const auto& row : report.rows) {
    json r = {{"key", row.key}, {"on", json::array()}};
    for (size_t i = 0; i < row.on.size(); ++i) {
      if (!row.on[i]) {
        r["on"].push_back(nullptr);
        continue;
      }
      r["on"].push_back({{"verdict", row.on[i]->verdict},
                         {"speedup", row.on[i]->speedup ? json(*row.on[i]->speedup) : json(nullptr)},
                         {"flags", row.on[i]->flags},
                         {"ratio", i > 0 && row.ratio[i] ? json(*row.ratio[i]) : json(nullptr)},
                         {"stops_correct", i > 0 && row.stops_correct[i]},
                         {"loses_speedup", i > 0 && row.loses_speedup[i]}});
    }
    j["rows"].push_back(r);
  }
  return j;
}

absl::StatusOr<std::vector<std::string>> WritePortReport(const PortReport& report, const std::vector<PortSet>& sets,
                                                         const std::string& out_dir) {
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) return absl::InternalError(absl::StrCat(out_dir, ": ", ec.message()));
  std::vector<std::string> written;
  const std::string json_path = (fs::path(out_dir) / "report.json").string();
  CRL_RETURN_IF_ERROR(WriteStringToFile(json_path, PortReportJson(report, sets).dump(2) + "\n"));
  written.push_back(json_path);

  // Trusted speedups per candidate, one bar series per machine.
  Chart c;
  c.kind = Chart::Kind::kBars;
  c.title = "Trusted speedup per candidate, per machine";
  c.y_title = "speedup (x)";
  c.reference_lines = {1.0};
  const uint32_t colours[] = {0x1f77b4, 0xff7f0e, 0x2ca02c, 0xd62728, 0x9467bd, 0x8c564b};
  for (const auto& row : report.rows) c.x_labels.push_back(row.key);
  for (size_t i = 0; i < report.machines.size(); ++i) {
    Series s{report.machines[i].label, {}, colours[i % 6]};
    s.group = static_cast<int>(i);
    for (const auto& row : report.rows) s.values.push_back(row.on[i] && row.on[i]->speedup ? *row.on[i]->speedup : NAN);
    c.series.push_back(std::move(s));
  }
  const std::string png = (fs::path(out_dir) / "speedups.png").string();
  CRL_RETURN_IF_ERROR(WritePng(c, png));
  written.push_back(png);
  CRL_ASSIGN_OR_RETURN(std::string png_bytes, ReadFileToString(png, "plot"));

  std::string html =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>crl port report</title>\n"
      "<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}table{border-collapse:"
      "collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}td:first-child,"
      "th:first-child{text-align:left}.bad{color:#b00}img{max-width:100%}</style></head><body>\n"
      "<h1>The same candidates on different machines</h1>\n<h2>Per machine</h2>\n<table><tr><th>machine</th>"
      "<th>driver</th><th>CUDA</th><th>torch</th><th>candidates</th><th>correct</th><th>trusted</th><th>mean</th>"
      "<th>median</th><th>geomean</th><th>like for like (n, mean, geomean)</th></tr>\n";
  for (size_t i = 0; i < report.machines.size(); ++i) {
    const PortMachine& m = report.machines[i];
    const json& p = sets[i].provenance;
    absl::StrAppendFormat(&html,
                          "<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%d</td><td>%d</td><td>%d</td>"
                          "<td>%.2fx</td><td>%.2fx</td><td>%.2fx</td><td>%d, %.2fx, %.2fx</td></tr>\n",
                          HtmlText(m.label), HtmlText(p.value("driver", std::string("?"))),
                          HtmlText(p.value("cuda", std::string("?"))), HtmlText(p.value("torch", std::string("?"))),
                          m.candidates, m.correct, m.trusted, m.mean, m.median, m.geomean, m.common, m.common_mean,
                          m.common_geomean);
  }
  absl::StrAppend(&html, "</table>\n<figure><img alt=\"speedups\" src=\"data:image/png;base64,",
                  absl::Base64Escape(png_bytes), "\"></figure>\n<h2>Per candidate</h2>\n<table><tr><th>candidate</th>");
  for (const auto& m : report.machines) absl::StrAppend(&html, "<th>", HtmlText(m.label), "</th>");
  absl::StrAppend(&html, "<th>what changed</th></tr>\n");
  for (const auto& row : report.rows) {
    absl::StrAppend(&html, "<tr><td>", HtmlText(row.key), "</td>");
    std::vector<std::string> changes;
    for (size_t i = 0; i < row.on.size(); ++i) {
      if (!row.on[i]) {
        absl::StrAppend(&html, "<td>absent</td>");
        continue;
      }
      std::string cell = row.on[i]->verdict == "OK" ? Speedup(row.on[i]->speedup) : row.on[i]->verdict;
      if (row.on[i]->verdict == "OK" && !row.on[i]->flags.empty()) {
        absl::StrAppend(&cell, " ", absl::StrJoin(row.on[i]->flags, ","));
      }
      if (i > 0 && row.ratio[i]) absl::StrAppendFormat(&cell, " (%.2f of first)", *row.ratio[i]);
      absl::StrAppend(&html, "<td>", HtmlText(cell), "</td>");
      if (i > 0 && row.stops_correct[i]) changes.push_back(report.machines[i].label + ": stops being correct");
      if (i > 0 && row.loses_speedup[i]) changes.push_back(report.machines[i].label + ": loses its speedup");
    }
    absl::StrAppend(&html, "<td class=\"bad\">", HtmlText(absl::StrJoin(changes, "; ")), "</td></tr>\n");
  }
  absl::StrAppend(&html,
                  "</table>\n<p>Trusted: verified and timed without a trust flag. Ratios are against the first "
                  "machine. Like for like: the candidates trusted on every machine.</p>\n</body></html>\n");
  const std::string html_path = (fs::path(out_dir) / "report.html").string();
  CRL_RETURN_IF_ERROR(WriteStringToFile(html_path, html));
  written.push_back(html_path);
  return written;
}

}  // namespace crl::report
