#include "services/cli/progress_bar.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace crl::cli {

ProgressBar::ProgressBar(std::ostream& out, int total, bool tty) : out_(out), total_(total), tty_(tty) {}

ProgressBar::~ProgressBar() { Finish(); }

void ProgressBar::Step(const std::string& label) {
  ++done_;
  std::string count = absl::StrCat(done_, "/", total_);
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

}  // namespace crl::cli
