#include "lib/report/chart.h"

#include <cairo.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace crl::report {
namespace {

constexpr double kLeft = 70, kRight = 20, kTop = 44, kBottom = 130;

void SetColor(cairo_t* cr, uint32_t rgb, double alpha = 1.0) {
  cairo_set_source_rgba(cr, ((rgb >> 16) & 255) / 255.0, ((rgb >> 8) & 255) / 255.0, (rgb & 255) / 255.0, alpha);
}

void Text(cairo_t* cr, const std::string& s, double x, double y, double size, double align_x = 0,
          bool bold = false, double angle = 0) {
  cairo_save(cr);
  cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL,
                         bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, size);
  cairo_text_extents_t e;
  cairo_text_extents(cr, s.c_str(), &e);
  cairo_translate(cr, x, y);
  cairo_rotate(cr, angle);
  cairo_move_to(cr, -e.width * align_x - e.x_bearing, 0);
  cairo_show_text(cr, s.c_str());
  cairo_restore(cr);
}

// A "nice" step for about `ticks` intervals over `span`.
double NiceStep(double span, int ticks) {
  const double raw = span / std::max(1, ticks);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    if (raw <= m * mag) return m * mag;
  }
  return 10 * mag;
}

std::string TickLabel(double v, bool percent) {
  if (percent) return absl::StrFormat("%.0f%%", v * 100);
  if (std::fabs(v - std::round(v)) < 1e-9) return absl::StrFormat("%.0f", v);
  return absl::StrFormat("%.2g", v);
}

}  // namespace

absl::Status WritePng(const Chart& c, const std::string& path) {
  const int W = c.width, H = c.height;
  cairo_surface_t* surface = cairo_image_surface_create(CAIRO_FORMAT_RGB24, W, H);
  cairo_t* cr = cairo_create(surface);
  SetColor(cr, 0xffffff);
  cairo_paint(cr);

  // Value range.
  double lo = c.y_min, hi = c.y_max;
  const size_t n = c.x_labels.size();
  if (c.kind == Chart::Kind::kStackedBars) {
    std::map<std::pair<int, size_t>, double> stack;
    for (const auto& s : c.series) {
      for (size_t i = 0; i < s.values.size() && i < n; ++i) {
        if (std::isfinite(s.values[i])) hi = std::max(hi, stack[{s.group, i}] += s.values[i]);
      }
    }
  } else {
    for (const auto& s : c.series) {
      for (const auto* values : {&s.values, &s.low, &s.high}) {
        for (double v : *values) {
          if (std::isfinite(v)) {
            hi = std::max(hi, v);
            lo = std::min(lo, v);
          }
        }
      }
    }
  }
  for (double r : c.reference_lines) hi = std::max(hi, r);
  if (hi <= lo) hi = lo + 1;
  const double step = NiceStep(hi - lo, 5);
  hi = std::ceil(hi / step - 1e-9) * step;
  lo = std::floor(lo / step + 1e-9) * step;

  const double px0 = kLeft, px1 = W - kRight, py0 = kTop, py1 = H - kBottom;
  auto Y = [&](double v) { return py1 - (v - lo) / (hi - lo) * (py1 - py0); };
  const double slot = n > 0 ? (px1 - px0) / n : (px1 - px0);
  auto X = [&](size_t i) { return px0 + slot * (i + 0.5); };

  // Title, grid, ticks.
  SetColor(cr, 0x222222);
  Text(cr, c.title, W / 2.0, 26, 16, 0.5, true);
  cairo_set_line_width(cr, 1);
  for (double v = lo; v <= hi + step / 2; v += step) {
    SetColor(cr, 0xe4e4e4);
    cairo_move_to(cr, px0, Y(v) + 0.5);
    cairo_line_to(cr, px1, Y(v) + 0.5);
    cairo_stroke(cr);
    SetColor(cr, 0x444444);
    Text(cr, TickLabel(v, c.percent), px0 - 8, Y(v) + 4, 11, 1.0);
  }
  SetColor(cr, 0x444444);
  cairo_move_to(cr, px0, py0);
  cairo_line_to(cr, px0, py1);
  cairo_line_to(cr, px1, py1);
  cairo_stroke(cr);
  if (!c.y_title.empty()) Text(cr, c.y_title, 18, (py0 + py1) / 2, 12, 0.5, false, -M_PI / 2);
  // X labels: slanted when crowded.
  const bool slant = n > 6 || std::any_of(c.x_labels.begin(), c.x_labels.end(),
                                          [&](const std::string& s) { return s.size() * 7.0 > slot; });
  for (size_t i = 0; i < n; ++i) {
    if (slant) {
      Text(cr, c.x_labels[i], X(i) + 4, py1 + 14, 11, 1.0, false, -M_PI / 6);
    } else {
      Text(cr, c.x_labels[i], X(i), py1 + 18, 11, 0.5);
    }
  }
  if (!c.x_title.empty()) Text(cr, c.x_title, (px0 + px1) / 2, H - 46, 12, 0.5);

  // Data.
  if (c.kind == Chart::Kind::kLines) {
    // Bands first, under every line: one translucent polygon per unbroken run.
    for (const auto& s : c.series) {
      const size_t m = std::min({s.low.size(), s.high.size(), n});
      for (size_t i = 0; i < m;) {
        size_t j = i;
        while (j < m && std::isfinite(s.low[j]) && std::isfinite(s.high[j])) ++j;
        if (j == i + 1) {  // a lone point: a short bar
          SetColor(cr, s.rgb, 0.18);
          cairo_rectangle(cr, X(i) - 6, Y(s.high[i]), 12, Y(s.low[i]) - Y(s.high[i]));
          cairo_fill(cr);
        } else if (j > i) {
          SetColor(cr, s.rgb, 0.18);
          cairo_move_to(cr, X(i), Y(s.high[i]));
          for (size_t k = i + 1; k < j; ++k) cairo_line_to(cr, X(k), Y(s.high[k]));
          for (size_t k = j; k-- > i;) cairo_line_to(cr, X(k), Y(s.low[k]));
          cairo_close_path(cr);
          cairo_fill(cr);
        }
        i = j + 1;
      }
    }
    for (const auto& s : c.series) {
      SetColor(cr, s.rgb);
      cairo_set_line_width(cr, 2.5);
      const double dash[] = {8, 5};
      cairo_set_dash(cr, dash, s.dashed ? 2 : 0, 0);
      bool pen = false;
      for (size_t i = 0; i < s.values.size() && i < n; ++i) {
        if (!std::isfinite(s.values[i])) {
          pen = false;
          continue;
        }
        if (pen) {
          cairo_line_to(cr, X(i), Y(s.values[i]));
        } else {
          cairo_move_to(cr, X(i), Y(s.values[i]));
        }
        pen = true;
      }
      cairo_stroke(cr);
      cairo_set_dash(cr, nullptr, 0, 0);
      for (size_t i = 0; i < s.values.size() && i < n; ++i) {
        if (!std::isfinite(s.values[i])) continue;
        cairo_arc(cr, X(i), Y(s.values[i]), 4, 0, 2 * M_PI);
        cairo_fill(cr);
      }
    }
  } else {
    // Bars: one column per series (kBars) or per group (kStackedBars).
    std::vector<int> columns;
    for (size_t k = 0; k < c.series.size(); ++k) {
      const int col = c.kind == Chart::Kind::kBars ? static_cast<int>(k) : c.series[k].group;
      if (std::find(columns.begin(), columns.end(), col) == columns.end()) columns.push_back(col);
    }
    const double width = slot * 0.8 / std::max<size_t>(1, columns.size());
    std::map<std::pair<int, size_t>, double> base;
    for (size_t k = 0; k < c.series.size(); ++k) {
      const auto& s = c.series[k];
      const int col = c.kind == Chart::Kind::kBars ? static_cast<int>(k) : s.group;
      const size_t at = std::find(columns.begin(), columns.end(), col) - columns.begin();
      for (size_t i = 0; i < s.values.size() && i < n; ++i) {
        if (!std::isfinite(s.values[i]) || s.values[i] == 0) continue;
        double& b = base[{col, i}];
        const double x = X(i) - slot * 0.4 + width * at;
        const double y0 = Y(std::max(lo, b)), y1 = Y(b + s.values[i]);
        SetColor(cr, s.rgb);
        cairo_rectangle(cr, x + 1, std::min(y0, y1), width - 2, std::fabs(y0 - y1));
        cairo_fill(cr);
        if (c.kind == Chart::Kind::kStackedBars) b += s.values[i];
      }
    }
    // Group names under stacked columns ("T", "U").
    if (c.kind == Chart::Kind::kStackedBars && columns.size() > 1) {
      for (size_t i = 0; i < n; ++i) {
        for (size_t at = 0; at < columns.size(); ++at) {
          const int g = columns[at];
          if (g < 0 || g >= static_cast<int>(c.group_names.size())) continue;
          SetColor(cr, 0x666666);
          Text(cr, c.group_names[g].substr(0, 1), X(i) - slot * 0.4 + width * (at + 0.5), py1 - 4, 10, 0.5);
        }
      }
    }
  }

  // Reference lines, over the data.
  for (double r : c.reference_lines) {
    SetColor(cr, 0xaa3333);
    const double dash[] = {5, 4};
    cairo_set_dash(cr, dash, 2, 0);
    cairo_move_to(cr, px0, Y(r) + 0.5);
    cairo_line_to(cr, px1, Y(r) + 0.5);
    cairo_stroke(cr);
    cairo_set_dash(cr, nullptr, 0, 0);
  }

  // Legend (one entry per name), along the bottom, wrapping to a second row.
  double lx = px0, ly = H - 30;
  std::vector<std::string> shown;
  for (const auto& s : c.series) {
    if (std::find(shown.begin(), shown.end(), s.name) != shown.end()) continue;
    shown.push_back(s.name);
    const double need = 26 + 6.5 * s.name.size();
    if (lx + need > W - 10 && lx > px0) {
      lx = px0;
      ly += 18;
    }
    SetColor(cr, s.rgb);
    cairo_rectangle(cr, lx, ly - 10, 12, 12);
    cairo_fill(cr);
    SetColor(cr, 0x333333);
    Text(cr, s.name, lx + 16, ly, 11);
    lx += need;
  }
  if (c.kind == Chart::Kind::kStackedBars && c.group_names.size() > 1) {
    std::string key;
    for (const auto& g : c.group_names) absl::StrAppend(&key, key.empty() ? "" : ", ", g.substr(0, 1), " = ", g);
    SetColor(cr, 0x666666);
    Text(cr, key, px1, kTop - 6, 11, 1.0);
  }

  cairo_destroy(cr);
  cairo_surface_flush(surface);
  const cairo_status_t st = cairo_surface_write_to_png(surface, path.c_str());
  cairo_surface_destroy(surface);
  if (st != CAIRO_STATUS_SUCCESS) {
    return absl::UnavailableError(absl::StrCat(path, ": cannot write the PNG: ", cairo_status_to_string(st)));
  }
  return absl::OkStatus();
}

std::string HtmlText(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace crl::report
