// Prompt templates and the builder: golden prompts for both formats, the
// token budget, trust flags in the text, template errors.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "common/file.h"
#include "services/prompt/prompt_builder.h"
#include "services/prompt/prompt_setup.h"

namespace crl::prompt {
namespace {

namespace fs = std::filesystem;
const std::string kSource = CRL_SOURCE_DIR;

const PromptBuilder& Builder() {
  static std::unique_ptr<PromptParts> parts = [] {
    PromptOptions o;
    o.shipped_dir = kSource + "/prompts";
    o.abi_header = kSource + "/include/crl/kernel.h";
    auto built = BuildPromptParts(o);
    REQUIRE(built.ok());
    return std::move(*built);
  }();
  return *parts->builder;
}

v1::Exemplar Variant(const std::string& id, const std::string& code, double speedup,
                     std::vector<v1::Flag> flags = {}, const std::string& analysis = "") {
  v1::Exemplar e;
  e.set_variant_id(id);
  e.set_source(code);
  e.set_verdict(v1::VERDICT_OK);
  e.set_speedup(speedup);
  for (auto f : flags) e.add_flags(f);
  e.set_analysis(analysis);
  return e;
}

v1::BuildPromptRequest NativeRequest() {
  v1::BuildPromptRequest r;
  r.mutable_task()->set_path(kSource + "/tasks/native/softmax_rows");
  r.set_backend(v1::BACKEND_CUDA);
  r.set_seed(7);
  *r.add_pool() = Variant("slow", "__global__ void k() {}\nint crl_run(const crl_args* a) { return 0; }",
                          0.8, {}, "One thread per row: the rows are long.");
  *r.add_pool() = Variant("fast", "__global__ void k2() {}\nint crl_run(const crl_args* a) { return 1; }",
                          2.4, {}, "A warp per row with shuffles.");
  return r;
}

// Compares with tests/unit/golden/<name>; CRL_UPDATE_GOLDEN=1 rewrites it.
void CheckGolden(const std::string& name, const std::string& text) {
  const std::string path = kSource + "/tests/unit/golden/" + name;
  if (std::getenv("CRL_UPDATE_GOLDEN")) {
    fs::create_directories(fs::path(path).parent_path());
    REQUIRE(WriteStringToFile(path, text).ok());
  }
  auto golden = ReadFileToString(path, "golden prompt");
  REQUIRE(golden.ok());
  CHECK(text == *golden);
}

std::string Flatten(const v1::BuildPromptResponse& r) {
  std::string out;
  for (const auto& m : r.messages()) out += "=== " + m.role() + "\n" + m.content() + "\n";
  return out;
}

TEST_CASE("golden prompt: a native task with two exemplars", "[prompt]") {
  auto r = Builder().Build(NativeRequest());
  REQUIRE(r.ok());
  CheckGolden("native_softmax_rows.txt", Flatten(*r));
  CHECK(r->exemplar_ids_size() == 2);
  CHECK(r->exemplar_ids(0) == "slow");  // slowest first
  CHECK(r->template_version().rfind("native@", 0) == 0);
  CHECK(r->estimated_tokens() > 500);
  REQUIRE(r->messages_size() == 2);
  CHECK(r->messages(0).role() == "system");
  CHECK(r->messages(0).content().find("CRL_ENTRY_SYMBOL") != std::string::npos);  // the ABI
  CHECK(r->messages(1).content().find("2.40x faster than the reference") != std::string::npos);
  CHECK(r->messages(1).content().find("A warp per row with shuffles.") != std::string::npos);
  CHECK(r->prompt().find("user:\n# Task: softmax_rows") != std::string::npos);
}

TEST_CASE("golden prompt: a KernelBench task without exemplars", "[prompt]") {
  v1::BuildPromptRequest r;
  r.mutable_task()->set_format(v1::TASK_FORMAT_KERNELBENCH);
  const std::string path = kSource + "/tasks/kernelbench/level1/3_Relu.py";
  auto content = ReadFileToString(path, "task");
  REQUIRE(content.ok());
  auto* f = r.mutable_task()->add_files();  // inline, as a remote caller sends it
  f->set_path("3_Relu.py");
  f->set_content(*content);
  auto built = Builder().Build(r);
  REQUIRE(built.ok());
  CheckGolden("kernelbench_3_relu.txt", Flatten(*built));
  CHECK(built->messages(1).content().find("There are no earlier variants") != std::string::npos);
  CHECK(built->messages(1).content().find(*content) != std::string::npos);
  CHECK(built->template_version().rfind("kernelbench@", 0) == 0);
}

TEST_CASE("a prompt never shows a flagged variant as fast", "[prompt]") {
  v1::BuildPromptRequest r = NativeRequest();
  r.clear_pool();
  *r.add_pool() = Variant("hack", "int crl_run(const crl_args* a) { launch_on_side_stream(); }",
                          35.0, {v1::FLAG_SIDE_STREAM});
  *r.add_pool() = Variant("ok", "int crl_run(const crl_args* a) { return 0; }", 1.1);
  r.mutable_selection()->set_strategy(v1::EXEMPLAR_STRATEGY_TOP_K);
  auto built = Builder().Build(r);
  REQUIRE(built.ok());
  const std::string& user = built->messages(1).content();
  CHECK(user.find("35") == std::string::npos);
  CHECK(user.find("speedup withheld: flagged SIDE_STREAM") != std::string::npos);
  CHECK(user.find("1.10x faster than the reference") != std::string::npos);
}

TEST_CASE("the token budget drops analyses, then exemplars, never the task", "[prompt]") {
  v1::BuildPromptRequest r = NativeRequest();
  const int full = Builder().Build(r)->estimated_tokens();
  auto without = [&](const std::string& text) {
    r.set_max_prompt_tokens(full - 5);
    auto built = Builder().Build(r);
    REQUIRE(built.ok());
    CHECK(built->estimated_tokens() <= full - 5);
    CHECK(built->messages(1).content().find(text) == std::string::npos);
    return *built;
  };
  // A few tokens short: the slow exemplar's analysis goes first.
  v1::BuildPromptResponse one = without("One thread per row");
  CHECK(one.analyses_dropped() == 1);
  CHECK(one.exemplars_dropped() == 0);
  CHECK(one.messages(1).content().find("A warp per row") != std::string::npos);
  bool noted = false;
  for (const auto& n : one.notes()) noted |= n.find("budget: dropped 1 analysis") == 0;
  CHECK(noted);

  // Room for the task and the fast exemplar without its analysis: both
  // analyses go, then the slow exemplar; the fast one stays.
  r.clear_max_prompt_tokens();
  v1::BuildPromptRequest fast_only = r;
  fast_only.mutable_pool()->DeleteSubrange(0, 1);
  fast_only.mutable_pool(0)->clear_analysis();
  r.set_max_prompt_tokens(Builder().Build(fast_only)->estimated_tokens());
  auto tight = Builder().Build(r);
  REQUIRE(tight.ok());
  CHECK(tight->analyses_dropped() == 2);
  CHECK(tight->exemplars_dropped() == 1);
  REQUIRE(tight->exemplar_ids_size() == 1);
  CHECK(tight->exemplar_ids(0) == "fast");
  v1::BuildPromptRequest bare = r;
  bare.mutable_selection()->set_strategy(v1::EXEMPLAR_STRATEGY_NONE);
  const int task_only = Builder().Build(bare)->estimated_tokens();

  r.set_max_prompt_tokens(task_only - 1);  // not even the task fits
  auto over = Builder().Build(r);
  CHECK(over.status().code() == absl::StatusCode::kOutOfRange);
  CHECK_THAT(std::string(over.status().message()), Catch::Contains("never truncated"));
}

TEST_CASE("bad requests name the field", "[prompt]") {
  v1::BuildPromptRequest r = NativeRequest();
  r.set_backend(v1::BACKEND_HOST);
  r.mutable_task()->set_path(kSource + "/tasks/kernelbench/level1/3_Relu.py");
  CHECK_FALSE(Builder().Build(r).ok());
  r = NativeRequest();
  for (int i = 0; i < 65; ++i) *r.add_pool() = r.pool(0);
  CHECK(Builder().Build(r).status().message() == "pool: 67 variants, at most 64");
  r = NativeRequest();
  r.set_template_name("nope");
  CHECK_THAT(std::string(Builder().Build(r).status().message()),
             Catch::Contains("template 'nope' is not loaded (loaded: kernelbench, native, native-compact)"));
  r = NativeRequest();
  r.clear_task();
  r.mutable_task()->add_files()->set_path("reference.cu");
  CHECK(Builder().Build(r).status().message() == "task: task.files: no task.yaml");
}

TEST_CASE("templates: sections, inverted sections, scopes, errors with lines", "[prompt]") {
  const std::vector<std::string> names = {"a", "list", "x"};
  auto t = PromptTemplate::Parse("t", "header\n=== system\nS {{a}}\n=== user\n"
                                      "{{#list}}[{{x}}/{{a}}]{{/list}}{{^list}}none{{/list}}\n",
                                 "t.tmpl", names);
  REQUIRE(t.ok());
  TemplateContext ctx;
  ctx.values["a"] = "A";
  ctx.lists["list"] = {TemplateContext{{{"x", "1"}}, {}}, TemplateContext{{{"x", "2"}}, {}}};
  auto r = t->Render(ctx);
  CHECK(r.system == "S A");
  CHECK(r.user == "[1/A][2/A]");  // the item scope, then the enclosing one
  ctx.lists.clear();
  CHECK(t->Render(ctx).user == "none");

  auto unknown = PromptTemplate::Parse("t", "=== system\nok\n=== user\nline\n{{typo}}\n", "t.tmpl", names);
  CHECK(unknown.status().message().rfind("t.tmpl:5: unknown name 'typo'", 0) == 0);
  auto unclosed = PromptTemplate::Parse("t", "=== system\n{{#list}}\n=== user\nx\n", "t.tmpl", names);
  CHECK(unclosed.status().message() == "t.tmpl:2: {{#list}} is never closed");
  auto mismatched =
      PromptTemplate::Parse("t", "=== system\n{{#list}}{{/a}}\n=== user\n", "t.tmpl", names);
  CHECK(mismatched.status().message() == "t.tmpl:2: {{/a}} closes {{#list}}");
  auto no_user = PromptTemplate::Parse("t", "=== system\nx\n", "t.tmpl", names);
  CHECK_THAT(std::string(no_user.status().message()), Catch::Contains("needs a '=== system' and a '=== user'"));
}

TEST_CASE("a user's template directory overrides the shipped templates by name", "[prompt]") {
  const std::string dir = fs::temp_directory_path() / ("crl-prompts-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  REQUIRE(WriteStringToFile(dir + "/native.tmpl", "=== system\nterse\n=== user\n{{task_name}}\n").ok());
  PromptOptions o;
  o.shipped_dir = kSource + "/prompts";
  o.abi_header = kSource + "/include/crl/kernel.h";
  o.template_dirs = {dir};
  auto parts = BuildPromptParts(o);
  REQUIRE(parts.ok());
  auto r = (*parts)->builder->Build(NativeRequest());
  REQUIRE(r.ok());
  CHECK(r->messages(0).content() == "terse");
  CHECK(r->messages(1).content() == "softmax_rows");
  REQUIRE(WriteStringToFile(dir + "/native.tmpl", "=== system\n{{bogus}}\n=== user\n").ok());
  CHECK_THAT(std::string(BuildPromptParts(o).status().message()),
             Catch::Contains("native.tmpl:2: unknown name 'bogus'"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace crl::prompt
