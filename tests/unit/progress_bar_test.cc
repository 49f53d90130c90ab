// The CLI's progress line: redrawn on a terminal, one line per step in logs.
#include <catch2/catch.hpp>

#include <sstream>

#include "services/cli/progress_bar.h"

namespace crl::cli {
namespace {

TEST_CASE("progress bar redraws one line on a terminal, one line per step otherwise", "[cli]") {
  std::ostringstream tty_out;
  {
    ProgressBar bar(tty_out, 4, /*tty=*/true);
    bar.Step("level1/1_Foo sample 0 ok 1.8x");
    bar.Step("level1/2_Bar");
    CHECK(bar.done() == 2);
  }  // the destructor ends the line
  std::string first = "\r[#####...............] 1/4 level1/1_Foo sample 0 ok 1.8x";
  std::string second = "\r[##########..........] 2/4 level1/2_Bar";
  std::string pad(first.size() - second.size(), ' ');
  CHECK(tty_out.str() == first + second + pad + "\n");

  std::ostringstream log_out;
  ProgressBar bar(log_out, 2, /*tty=*/false);
  bar.Step("a");
  bar.Step("b");
  bar.Finish();
  bar.Finish();
  CHECK(log_out.str() == "1/2 a\n2/2 b\n");

  std::ostringstream over;
  ProgressBar full(over, 1, true);
  full.Step("x");
  full.Step("y");  // more steps than total: the bar stays full
  CHECK_THAT(over.str(), Catch::Contains("[####################] 2/1 y"));
}

}  // namespace
}  // namespace crl::cli
