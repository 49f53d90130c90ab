// A progress line for long CLI batches.
#ifndef CRL_SERVICES_CLI_PROGRESS_BAR_H_
#define CRL_SERVICES_CLI_PROGRESS_BAR_H_

#include <ostream>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "common/clock.h"

namespace crl::cli {

// On a terminal, redraws one line in place:
//   "[#####...............] 12/40 (3.1/min, ETA 9m02s) level1/3_Foo sample 0 ok 1.8x"
// otherwise prints one line per step ("12/40 (3.1/min, ETA 9m02s) level1/3_Foo ..."),
// which reads well in CI logs. The rate is steps per minute since the bar
// started (per hour when below one a minute); the ETA is what is left at
// that rate.
class ProgressBar {
 public:
  ProgressBar(std::ostream& out, int total, bool tty, ClockInterface* clock = RealClock::Get());
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  void Step(const std::string& label);
  // Ends the redrawn line. Idempotent; also run by the destructor.
  void Finish();

  int done() const { return done_; }

 private:
  std::ostream& out_;
  int total_;
  ClockInterface* clock_;
  absl::Time start_;
  bool tty_;
  int done_ = 0;
  size_t last_width_ = 0;
  bool finished_ = false;
};

// Thins a stream of status lines in which some repeat fast (an SFT stage's
// rounds are epochs of milliseconds on a GPU: 300 of them in a second). A
// frequent line is shown when `every` has passed since the last line shown;
// one held back is shown before the next line that must be, so the last of a
// run of rounds is never lost. Each call returns the lines to print now.
class LineThinner {
 public:
  explicit LineThinner(absl::Duration every, ClockInterface* clock = RealClock::Get())
      : every_(every), clock_(clock) {}

  std::vector<std::string> Frequent(std::string line);
  std::vector<std::string> Always(std::string line);
  // The line held back, if any (at the end of the stream).
  std::vector<std::string> Flush();

 private:
  std::vector<std::string> Show(std::string line);

  absl::Duration every_;
  ClockInterface* clock_;
  absl::Time last_shown_ = absl::InfinitePast();
  std::string held_;
};

}  // namespace crl::cli

#endif  // CRL_SERVICES_CLI_PROGRESS_BAR_H_
