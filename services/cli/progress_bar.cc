#include "services/cli/progress_bar.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace crl::cli {

ProgressBar::ProgressBar(std::ostream& out, int total, bool tty, ClockInterface* clock)
    : out_(out), total_(total), clock_(clock), start_(clock->MonotonicNow()), tty_(tty) {}

namespace {

// "9m02s", "1h05m", "45s".
std::string Eta(double seconds) {
  const int64_t s = static_cast<int64_t>(seconds + 0.5);
  if (s >= 3600) return absl::StrFormat("%dh%02dm", s / 3600, (s % 3600) / 60);
  if (s >= 60) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  return absl::StrFormat("%ds", s);
}

}  // namespace

ProgressBar::~ProgressBar() { Finish(); }

void ProgressBar::Step(const std::string& label) {
  ++done_;
  std::string count = absl::StrCat(done_, "/", total_);
  const double elapsed = absl::ToDoubleSeconds(clock_->MonotonicNow() - start_);
  if (elapsed > 0) {
    const double per_second = done_ / elapsed;
    absl::StrAppend(&count, per_second * 60 >= 1 ? absl::StrFormat(" (%.1f/min", per_second * 60)
                                                 : absl::StrFormat(" (%.1f/h", per_second * 3600));
    if (done_ < total_) absl::StrAppend(&count, ", ETA ", Eta((total_ - done_) / per_second));
    absl::StrAppend(&count, ")");
  }
  if (!tty_) {
    out_ << count << " " << label << "\n" << std::flush;
    return;
  }
  constexpr int kWidth = 20;
  int filled = total_ > 0 ? std::min(done_, total_) * kWidth / total_ : 0;
  std::string line = absl::StrCat("[", std::string(filled, '#'), std::string(kWidth - filled, '.'), "] ",
                                  count, " ", label);
  size_t width = line.size();
  // Blank out what is left of a longer previous line.
  if (line.size() < last_width_) line += std::string(last_width_ - line.size(), ' ');
  last_width_ = width;
  out_ << "\r" << line << std::flush;
}

void ProgressBar::Finish() {
  if (finished_) return;
  finished_ = true;
  if (tty_ && done_ > 0) out_ << "\n" << std::flush;
}

std::vector<std::string> LineThinner::Show(std::string line) {
  last_shown_ = clock_->MonotonicNow();
  held_.clear();
  return {std::move(line)};
}

std::vector<std::string> LineThinner::Frequent(std::string line) {
  if (clock_->MonotonicNow() - last_shown_ >= every_) return Show(std::move(line));
  held_ = std::move(line);
  return {};
}

std::vector<std::string> LineThinner::Always(std::string line) {
  std::vector<std::string> out = Flush();
  out.push_back(Show(std::move(line)).front());
  return out;
}

std::vector<std::string> LineThinner::Flush() {
  if (held_.empty()) return {};
  return Show(std::move(held_));
}

}  // namespace crl::cli
