// Every shipped host candidate of the native suite through the real worker
// engine (sandboxed compiler and runners): each must get the verdict its
// task's candidates/expect.yaml names, and the worker must keep serving.
#include <catch2/catch.hpp>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/file.h"
#include "services/worker/worker_setup.h"
#include "tests/support/service_process.h"
#include "tests/support/test_worker.h"
#include "tests/support/wait.h"

namespace crl::testing {
namespace {

namespace fs = std::filesystem;

std::string Short(v1::Verdict v) {
  std::string n = v1::Verdict_Name(v);
  return n.substr(8);
}

TEST_CASE("every shipped host candidate gets its expected verdict", "[suite]") {
  TempDir dir;
  auto rt = BuildWorker(HostWorkerOptions(dir.path() + "/cache", dir.path() + "/work"), nullptr);
  REQUIRE(rt.ok());
  EvalEngine& engine = *(*rt)->engine;

  int checked = 0;
  std::map<std::string, int> by_verdict;
  for (const auto& e : fs::directory_iterator(std::string(CRL_SOURCE_DIR) + "/tasks/native")) {
    fs::path expect_file = e.path() / "candidates" / "expect.yaml";
    if (!fs::exists(expect_file)) continue;
    YAML::Node expect = YAML::LoadFile(expect_file.string());
    const bool degenerate_task = YAML::LoadFile((e.path() / "task.yaml").string())["degenerate_expected"].as<bool>(false);
    for (const auto& kv : expect) {
      std::string file = kv.first.Scalar();
      if (fs::path(file).extension() != ".cc") continue;
      std::string want =
          kv.second.IsMap() ? kv.second["verdict"].as<std::string>() : kv.second.Scalar();
      v1::EvaluateRequest req;
      req.mutable_task()->set_path(e.path().string());
      req.mutable_candidate()->set_source(
          ReadFileToString((e.path() / "candidates" / file).string(), "candidate").value_or(""));
      req.mutable_candidate()->set_backend(v1::BACKEND_HOST);
      auto r = engine.Evaluate(req, RequestContext::Background());
      REQUIRE(r.ok());
      std::string why = r->messages_size() ? r->messages(0) : "";
      INFO(e.path().filename().string() << "/" << file << ": " << why);
      CHECK(Short(r->verdict()) == want);
      // Only a task degenerate on purpose (task.yaml's degenerate_expected)
      // is found so: the trivial solution passes it, so every speedup on it
      // is flagged, the trivial solution's own among them.
      const bool degenerate = std::find(r->flags().begin(), r->flags().end(), v1::FLAG_DEGENERATE_TASK) != r->flags().end();
      CHECK(degenerate == (want == "OK" && degenerate_task));
      ++by_verdict[want];
      ++checked;
    }
  }
  // The suite covers every verdict a candidate can earn on the host.
  CHECK(checked >= 60);
  CHECK(by_verdict["OK"] > 0);
  CHECK(by_verdict["WRONG_ANSWER"] > 0);
  CHECK(by_verdict["COMPILE_ERROR"] > 0);
  CHECK(by_verdict["SANDBOX_VIOLATION"] > 0);
  // Those verdicts were reached with the reference's answers recorded by a
  // task's first complete verification (reference_cache.h) ...
  CHECK(engine.ReferenceCacheStats().hits > 20);

  // ... and with sides from the native warm pool where it had runners
  // ready: wait for it to fill, then one more evaluation takes from it.
  NativeWarmPool* pool = (*rt)->native_warm.get();
  REQUIRE(pool != nullptr);
  REQUIRE(testing::Eventually([&] { return pool->stats().idle >= 1; }, absl::Seconds(30), absl::Milliseconds(50)));
  const uint64_t warm_before = pool->stats().warm;
  const fs::path row_sum = fs::path(CRL_SOURCE_DIR) / "tasks/native/row_sum";
  v1::EvaluateRequest req;
  req.mutable_task()->set_path(row_sum.string());
  req.mutable_candidate()->set_source(ReadFileToString((row_sum / "reference.cc").string(), "reference").value_or(""));
  req.mutable_candidate()->set_backend(v1::BACKEND_HOST);
  auto r = engine.Evaluate(req, RequestContext::Background());
  REQUIRE(r.ok());
  CHECK(r->verdict() == v1::VERDICT_OK);
  CHECK(pool->stats().warm > warm_before);
}

}  // namespace
}  // namespace crl::testing
