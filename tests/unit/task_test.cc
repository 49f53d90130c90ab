#include <catch2/catch.hpp>

#include <filesystem>

#include "crl/kernel.h"
#include "lib/task/native_task.h"

namespace crl {
namespace {

const char* kGood = R"(name: scale_rows
description: y = s * x
backends: [host, cuda]
reference: {host: reference.cc, cuda: reference.cu}
sizes: {N: 64, D: 32}
verify_sizes:
  - {N: 7, D: 33}
scalars: {s: 2.5}
inputs:
  - name: x
    dtype: float32
    shape: [N, D]
    distributions: ['uniform(-1, 1)', 'normal(0, 3)']
outputs:
  - name: y
    dtype: float32
    shape: [N, D]
tolerance:
  float32: {atol: 1.0e-5}
flops: N*D
bytes: 8*N*D
)";

std::string Error(const std::string& yaml) {
  auto t = ParseNativeTask(yaml, "/tasks/t", "t/task.yaml");
  return t.ok() ? "" : std::string(t.status().message());
}

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  auto pos = s.find(from);
  REQUIRE(pos != std::string::npos);
  return s.replace(pos, from.size(), to);
}

TEST_CASE("a well-formed manifest parses completely", "[task]") {
  auto t = ParseNativeTask(kGood, "/tasks/t", "t/task.yaml");
  INFO(t.status());
  REQUIRE(t.ok());
  CHECK(t->name == "scale_rows");
  CHECK(t->Supports(BackendKind::kHost));
  CHECK(t->Supports(BackendKind::kCuda));
  CHECK(t->reference.at(BackendKind::kHost) == "/tasks/t/reference.cc");
  CHECK(t->AllSizeSets().size() == 2);
  CHECK(t->ScalarValues() == std::vector<double>{2.5});
  CHECK(t->ToleranceFor(CRL_FLOAT32).atol == 1e-5);
  CHECK(t->ToleranceFor(CRL_FLOAT32).rtol == 1e-4);  // default kept
  CHECK(t->ToleranceFor(CRL_INT32).atol == 0);
  auto specs = t->InputSpecs(t->verify_sizes[0]);
  REQUIRE(specs.ok());
  CHECK((*specs)[0].shape == std::vector<int64_t>{7, 33});
  CHECK(t->inputs[0].distributions.size() == 2);
}

TEST_CASE("manifest errors name the file, the line and the field", "[task]") {
  CHECK(Error(Replace(kGood, "dtype: float32\n    shape: [N, D]\n    distributions",
                      "dtype: float33\n    shape: [N, D]\n    distributions")) ==
        "t/task.yaml:11: inputs[0].dtype: unknown dtype 'float33'");
  CHECK(Error(Replace(kGood, "normal(0, 3)", "normal(0, -3)"))
            .rfind("t/task.yaml:13: inputs[0].distributions[1]: ", 0) == 0);
  CHECK(Error(Replace(kGood, "shape: [N, D]\n    distributions", "shape: [N, Q]\n    distributions"))
            .find("unknown size 'Q'") != std::string::npos);
  CHECK(Error(Replace(kGood, "name: scale_rows", "name: Scale Rows")) ==
        "t/task.yaml:1: name: must match [a-z0-9_]+");
  CHECK(Error(Replace(kGood, "backends: [host, cuda]", "backends: [host, tpu]")) ==
        "t/task.yaml:3: backends: unknown backend 'tpu'");
  CHECK(Error(Replace(kGood, "reference.cc", "../../etc/passwd")) ==
        "t/task.yaml:4: reference.host: must be a file name inside the task directory");
  CHECK(Error(Replace(kGood, "{N: 7, D: 33}", "{D: 33, N: 7}")).find("same order") !=
        std::string::npos);
  CHECK(Error(Replace(kGood, "{N: 64, D: 32}", "{N: 0, D: 32}")) ==
        "t/task.yaml:5: sizes.N: expected an integer >= 1");
  CHECK(Error(std::string(kGood) + "extra: 1\n") == "t/task.yaml:22: extra: unknown key");
  CHECK(Error("name: [unclosed\n").find("invalid YAML") != std::string::npos);
  // Inputs and outputs are separate namespaces.
  CHECK(Error(Replace(kGood, "  - name: y\n", "  - name: x\n")) == "");
}

TEST_CASE("an unquoted flow list of distributions gets a hint", "[task]") {
  std::string e = Error(Replace(kGood, "['uniform(-1, 1)', 'normal(0, 3)']",
                                "[uniform(-1, 1), normal(0, 3)]"));
  CHECK(e.find("quote") != std::string::npos);
}

TEST_CASE("every shipped native task loads", "[task]") {
  namespace fs = std::filesystem;
  int n = 0;
  for (const auto& e : fs::directory_iterator(std::string(CRL_SOURCE_DIR) + "/tasks/native")) {
    if (!fs::exists(e.path() / "task.yaml")) continue;
    auto t = LoadNativeTask(e.path().string());
    INFO(e.path().string() << ": " << t.status());
    CHECK(t.ok());
    ++n;
  }
  CHECK(n >= 12);
}

}  // namespace
}  // namespace crl
