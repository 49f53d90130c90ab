#include <catch2/catch.hpp>

#include "lib/task/expr.h"

namespace crl {
namespace {

TEST_CASE("size expressions evaluate with precedence and names", "[expr]") {
  SizeSet s{{"N", 8}, {"D", 3}};
  CHECK(*EvalSizeExpr("N", s) == 8);
  CHECK(*EvalSizeExpr("  2*N + D ", s) == 19);
  CHECK(*EvalSizeExpr("(N+1)*D/2", s) == 13);
  CHECK(*EvalSizeExpr("N - -D", s) == 11);
  CHECK(*EvalSizeExpr("42", s) == 42);
}

TEST_CASE("bad size expressions say what and where", "[expr]") {
  SizeSet s{{"N", 8}};
  auto unknown = EvalSizeExpr("N*M", s);
  CHECK(unknown.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(std::string(unknown.status().message()).find("unknown size 'M'") != std::string::npos);
  CHECK(std::string(unknown.status().message()).find("column 3") != std::string::npos);
  CHECK(std::string(EvalSizeExpr("N/0", s).status().message()).find("division by zero") !=
        std::string::npos);
  CHECK(std::string(EvalSizeExpr("(N", s).status().message()).find("missing ')'") !=
        std::string::npos);
  CHECK(std::string(EvalSizeExpr("N N", s).status().message()).find("unexpected") !=
        std::string::npos);
  CHECK(std::string(EvalSizeExpr("99999999999*99999999999", s).status().message())
            .find("overflow") != std::string::npos);
  CHECK_FALSE(EvalSizeExpr("", s).ok());
}

}  // namespace
}  // namespace crl
