// The CLI's progress line: redrawn on a terminal, one line per step in logs.
#include <catch2/catch.hpp>

#include <sstream>

#include "services/cli/progress_bar.h"

namespace crl::cli {
namespace {

TEST_CASE("progress bar redraws one line on a terminal, one line per step otherwise", "[cli]") {
  FakeClock clock;
  std::ostringstream tty_out;
  {
    ProgressBar bar(tty_out, 4, /*tty=*/true, &clock);
    clock.Advance(absl::Seconds(30));
    bar.Step("level1/1_Foo sample 0 ok 1.8x");
    clock.Advance(absl::Seconds(30));
    bar.Step("level1/2_Bar");
    CHECK(bar.done() == 2);
  }  // the destructor ends the line
  // 1 step in 30 s: 2/min, 3 left: 1m30s; 2 in 60 s: 2/min, 2 left: 1m00s.
  std::string first = "\r[#####...............] 1/4 (2.0/min, ETA 1m30s) level1/1_Foo sample 0 ok 1.8x";
  std::string second = "\r[##########..........] 2/4 (2.0/min, ETA 1m00s) level1/2_Bar";
  std::string pad(first.size() - second.size(), ' ');
  CHECK(tty_out.str() == first + second + pad + "\n");

  std::ostringstream log_out;
  ProgressBar bar(log_out, 2, /*tty=*/false, &clock);
  clock.Advance(absl::Hours(2));
  bar.Step("a");
  clock.Advance(absl::Seconds(1));
  bar.Step("b");  // the last step: a rate, no ETA
  bar.Finish();
  bar.Finish();
  CHECK(log_out.str() == "1/2 (0.5/h, ETA 2h00m) a\n2/2 (1.0/h) b\n");

  std::ostringstream over;
  ProgressBar full(over, 1, true, &clock);
  full.Step("x");
  full.Step("y");  // more steps than total: the bar stays full
  CHECK_THAT(over.str(), Catch::Contains("[####################] 2/1 y"));  // no time passed: no rate
}

TEST_CASE("line thinner shows a fast stream of rounds every few seconds and never loses the last", "[cli]") {
  FakeClock clock;
  LineThinner lines(absl::Seconds(5), &clock);
  using V = std::vector<std::string>;
  CHECK(lines.Always("stage sft") == V{"stage sft"});
  CHECK(lines.Frequent("round 1") == V{});  // 0 s after the stage line
  CHECK(lines.Frequent("round 2") == V{});
  clock.Advance(absl::Seconds(5));
  CHECK(lines.Frequent("round 3") == V{"round 3"});
  CHECK(lines.Frequent("round 4") == V{});
  CHECK(lines.Frequent("round 5") == V{});
  // The last round held back comes before the line that ends the stage.
  CHECK(lines.Always("succeeded") == V{"round 5", "succeeded"});
  CHECK(lines.Flush() == V{});
  // Slow rounds are each shown.
  clock.Advance(absl::Seconds(6));
  CHECK(lines.Frequent("round 1") == V{"round 1"});
  clock.Advance(absl::Seconds(6));
  CHECK(lines.Frequent("round 2") == V{"round 2"});
  // A stream that ends on a held line gives it back at the end.
  CHECK(lines.Frequent("round 3") == V{});
  CHECK(lines.Flush() == V{"round 3"});
  CHECK(lines.Flush() == V{});
}

}  // namespace
}  // namespace crl::cli
