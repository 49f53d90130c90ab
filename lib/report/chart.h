// Charts as PNG files (cairo): lines or bars over labelled x positions,
// with axes, ticks, a legend and reference lines. Enough for a run's
// report, nothing more; used by report.cc.
//
//   Chart c;
//   c.title = "Mean reward per round";
//   c.x_labels = {"round 1", "round 2"};
//   c.series = {{"trained", {0.1, 0.4}, kBlue}, {"untrained", {0.1, 0.2}, kGrey}};
//   CRL_RETURN_IF_ERROR(WritePng(c, "reward.png"));
#ifndef CRL_LIB_REPORT_CHART_H_
#define CRL_LIB_REPORT_CHART_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace crl::report {

struct Series {
  std::string name;
  // One value per x label; NaN: no value there (a gap in a line, no bar).
  std::vector<double> values;
  uint32_t rgb = 0x1f77b4;
  // Stacked bars: series of one group stack; groups stand side by side.
  int group = 0;
  // Lines: drawn dashed.
  bool dashed = false;
  // Lines: a shaded band from low[i] to high[i] (a confidence interval);
  // empty: none. NaN entries leave a gap.
  std::vector<double> low = {}, high = {};
};

struct Chart {
  enum class Kind { kLines, kBars, kStackedBars };
  Kind kind = Kind::kLines;
  std::string title;
  std::string x_title;
  std::string y_title;
  std::vector<std::string> x_labels;
  std::vector<Series> series;
  // Names under each group of stacked bars ("trained", "untrained").
  std::vector<std::string> group_names;
  // Horizontal lines drawn across the plot (e.g. speedup 1).
  std::vector<double> reference_lines;
  // The y axis spans [y_min, max(data, y_max)].
  double y_min = 0;
  double y_max = 0;
  // Values are shares in [0, 1], shown as percentages.
  bool percent = false;
  int width = 860;
  int height = 480;
};

// Renders `chart` and writes it as a PNG. Errors name the path.
absl::Status WritePng(const Chart& chart, const std::string& path);

// `s` as HTML text (&, <, > and " escaped), for the reports that embed charts.
std::string HtmlText(const std::string& s);

}  // namespace crl::report

#endif  // CRL_LIB_REPORT_CHART_H_
