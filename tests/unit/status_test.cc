#include <catch2/catch.hpp>

#include "common/grpc_status.h"
#include "common/status.h"

namespace crl {
namespace {

absl::Status FailsWith(absl::StatusCode code) { return absl::Status(code, "boom"); }

absl::Status UsesReturnIfError(absl::StatusCode code, bool* reached_end) {
  CRL_RETURN_IF_ERROR(FailsWith(code));
  *reached_end = true;
  return absl::OkStatus();
}

absl::StatusOr<int> Half(int x) {
  if (x % 2) return absl::InvalidArgumentError("odd");
  return x / 2;
}

absl::StatusOr<int> Quarter(int x) {
  CRL_ASSIGN_OR_RETURN(int h, Half(x));
  CRL_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

TEST_CASE("every status code survives the round trip to grpc and back", "[status]") {
  for (int code = 0; code <= 16; ++code) {
    absl::Status original(static_cast<absl::StatusCode>(code), code ? "message " + std::to_string(code) : "");
    grpc::Status g = ToGrpcStatus(original);
    CHECK(static_cast<int>(g.error_code()) == code);
    absl::Status back = FromGrpcStatus(g);
    CHECK(back == original);
  }
}

TEST_CASE("unknown grpc codes become UNKNOWN, keeping the message", "[status]") {
  absl::Status s = FromGrpcStatus(grpc::Status(static_cast<grpc::StatusCode>(42), "odd code"));
  CHECK(s.code() == absl::StatusCode::kUnknown);
  CHECK(s.message() == "odd code");
}

TEST_CASE("CRL_RETURN_IF_ERROR returns early only on error", "[status]") {
  bool reached = false;
  CHECK(UsesReturnIfError(absl::StatusCode::kNotFound, &reached).code() ==
        absl::StatusCode::kNotFound);
  CHECK_FALSE(reached);
  CHECK(UsesReturnIfError(absl::StatusCode::kOk, &reached).ok());
  CHECK(reached);
}

TEST_CASE("CRL_ASSIGN_OR_RETURN propagates the first error", "[status]") {
  CHECK(*Quarter(8) == 2);
  CHECK(Quarter(6).status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(Quarter(7).status().message() == "odd");
}

TEST_CASE("Annotate prefixes context and keeps the code", "[status]") {
  absl::Status s = Annotate(absl::NotFoundError("no file"), "loading task x");
  CHECK(s.code() == absl::StatusCode::kNotFound);
  CHECK(s.message() == "loading task x: no file");
  CHECK(Annotate(absl::OkStatus(), "ctx").ok());
}

}  // namespace
}  // namespace crl
