// crl-prompt as a real service: health, metrics, BuildPrompt with an inline
// task, ParseCompletion's rejects over the wire, a broken template refused at
// start, and the CLI against it.
#include <catch2/catch.hpp>
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "common/file.h"
#include "crl/v1/prompt.grpc.pb.h"
#include "tests/support/service_process.h"

namespace crl::testing {
namespace {

const std::string kBin = CRL_BIN_DIR;
const std::string kSource = CRL_SOURCE_DIR;

std::string Read(const std::string& path) { return ReadFileToString(path, "file").value_or(""); }

TEST_CASE("crl-prompt builds and parses over gRPC, and counts what it did", "[integration][prompt]") {
  ServiceProcess prompt(kBin + "/crl-prompt", {"--listen=127.0.0.1:0", "--metrics_listen=127.0.0.1:0",
                                               "--drain_delay=0s", "--log_level=warning"});
  REQUIRE(prompt.started());
  CHECK(std::system((kBin + "/crl health --service crl.v1.PromptService " +
                     prompt.grpc_address() + " >/dev/null")
                        .c_str()) == 0);
  auto stub = v1::PromptService::NewStub(
      grpc::CreateChannel(prompt.grpc_address(), grpc::InsecureChannelCredentials()));

  // A native task sent inline, as a scheduler on another machine sends it.
  v1::BuildPromptRequest build;
  build.mutable_task()->set_format(v1::TASK_FORMAT_NATIVE);
  for (const char* name : {"task.yaml", "reference.cc", "reference.cu"}) {
    auto* f = build.mutable_task()->add_files();
    f->set_path(name);
    f->set_content(Read(kSource + "/tasks/native/row_sum/" + name));
  }
  build.set_backend(v1::BACKEND_HOST);
  auto* e = build.add_pool();
  e->set_variant_id("v1");
  e->set_source(Read(kSource + "/tasks/native/row_sum/candidates/fast_correct.cc"));
  e->set_verdict(v1::VERDICT_OK);
  e->set_speedup(4.6);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  v1::BuildPromptResponse built;
  grpc::Status s = stub->BuildPrompt(&ctx, build, &built);
  REQUIRE(s.ok());
  REQUIRE(built.messages_size() == 2);
  CHECK(built.messages(1).content().find("# Task: row_sum (host backend, C++)") != std::string::npos);
  CHECK(built.messages(1).content().find("4.60x faster than the reference") != std::string::npos);
  CHECK(built.exemplar_ids(0) == "v1");

  v1::ParseCompletionRequest parse;
  parse.set_completion("### Performance analysis\nmemory bound\n### Code\n```python\nx = 1\n```\n");
  parse.set_backend(v1::BACKEND_HOST);
  grpc::ClientContext pctx;
  v1::ParseCompletionResponse parsed;
  REQUIRE(stub->ParseCompletion(&pctx, parse, &parsed).ok());
  CHECK(parsed.error() == v1::PARSE_ERROR_WRONG_LANGUAGE);  // a reject is an answer, not a failure

  v1::BuildPromptRequest bad = build;
  bad.mutable_task()->mutable_files()->RemoveLast();
  bad.mutable_task()->mutable_files()->RemoveLast();
  grpc::ClientContext bctx;
  v1::BuildPromptResponse unused;
  grpc::Status refused = stub->BuildPrompt(&bctx, bad, &unused);
  CHECK(refused.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(refused.error_message() == "task: task.files: no reference.cc");

  const std::string metrics = HttpGet(prompt.metrics_port(), "/metrics");
  CHECK(metrics.find("crl_prompt_builds_total 1") != std::string::npos);
  CHECK(metrics.find("crl_prompt_parses_total{result=\"wrong_language\"} 1") != std::string::npos);
  CHECK(metrics.find("crl_prompt_exemplars_shown_total 1") != std::string::npos);

  // The CLI through the service: a completion file gets the same verdict.
  TempDir dir;
  std::ofstream(dir.path() + "/c.md") << parse.completion();
  const std::string cli = kBin + "/crl prompt parse " + dir.path() + "/c.md --backend host --prompt " +
                          prompt.grpc_address() + " > " + dir.path() + "/out.txt";
  int rc = std::system(cli.c_str());
  CHECK(WEXITSTATUS(rc) == 1);
  CHECK(Read(dir.path() + "/out.txt").rfind("rejected: WRONG_LANGUAGE", 0) == 0);

  prompt.Signal(SIGTERM);
  CHECK(prompt.Wait(30) == 0);
}

TEST_CASE("crl-prompt refuses to start on a broken template, naming it", "[integration][prompt]") {
  TempDir dir;
  std::ofstream(dir.path() + "/native.tmpl") << "=== system\nhello {{nmae}}\n=== user\nx\n";
  const std::string cmd = kBin + "/crl-prompt --listen=127.0.0.1:0 --metrics_listen= --prompts_dir=" +
                          dir.path() + " 2>" + dir.path() + "/err.txt";
  int rc = std::system(cmd.c_str());
  CHECK(WEXITSTATUS(rc) == 1);
  CHECK(Read(dir.path() + "/err.txt").find("native.tmpl:2: unknown name 'nmae'") != std::string::npos);
}

}  // namespace
}  // namespace crl::testing
