// crl-bench-prompt: the cost of BuildPrompt and ParseCompletion at the
// largest pool a request may carry (64 exemplars), in-process, printed as
// p50/p99 microseconds (docs/benchmarks.md).
//
//   build/bin/crl-bench-prompt [--iterations 2000]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "common/file.h"
#include "common/options.h"
#include "common/paths.h"
#include "services/prompt/completion_parser.h"
#include "services/prompt/prompt_setup.h"

namespace {

namespace fs = std::filesystem;

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(p * (v.size() - 1))];
}

}  // namespace

int main(int argc, char** argv) {
  int iterations = 2000;
  crl::OptionSet flags("crl-bench-prompt", "BuildPrompt and ParseCompletion latency, 64 exemplars.");
  flags.Add("iterations", &iterations, "calls of each");
  if (int rc = flags.ParseForMain(argc, argv); rc >= 0) return rc;
  auto parts = crl::prompt::BuildPromptParts({});
  if (!parts.ok()) {
    std::fprintf(stderr, "%s\n", parts.status().ToString().c_str());
    return 1;
  }
  const std::string tasks = crl::FindShippedDir("tasks/native");
  // The pool: every shipped .cu candidate of the suite (real code sizes),
  // repeated with distinct comments to reach 64, with spread speedups.
  std::vector<std::string> sources;
  for (const auto& task : fs::directory_iterator(tasks)) {
    for (const auto& f : fs::directory_iterator(task.path() / "candidates")) {
      if (f.path().extension() == ".cu") {
        sources.push_back(crl::ReadFileToString(f.path().string(), "candidate").value_or(""));
      }
    }
  }
  crl::v1::BuildPromptRequest request;
  // The task inline, as a scheduler on another machine sends it.
  for (const char* name : {"task.yaml", "reference.cc", "reference.cu"}) {
    auto* f = request.mutable_task()->add_files();
    f->set_path(name);
    f->set_content(crl::ReadFileToString(tasks + "/softmax_rows/" + name, "task").value_or(""));
  }
  request.set_backend(crl::v1::BACKEND_CUDA);
  size_t pool_bytes = 0;
  for (int i = 0; i < 64; ++i) {
    auto* e = request.add_pool();
    e->set_variant_id("v" + std::to_string(i));
    e->set_source(sources[i % sources.size()] + "\n// variant " + std::to_string(i) + "\n");
    e->set_verdict(crl::v1::VERDICT_OK);
    e->set_speedup(0.5 + 0.05 * i);
    e->set_analysis("The loop is memory bound; coalescing the loads helps.");
    pool_bytes += e->source().size();
  }
  std::vector<double> build_us, parse_us;
  std::string completion;
  int tokens = 0;
  for (int i = 0; i < iterations; ++i) {
    request.set_seed(i + 1);
    auto t0 = std::chrono::steady_clock::now();
    auto r = (*parts)->builder->Build(request);
    auto t1 = std::chrono::steady_clock::now();
    if (!r.ok()) {
      std::fprintf(stderr, "%s\n", r.status().ToString().c_str());
      return 1;
    }
    build_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    tokens = r->estimated_tokens();
    if (completion.empty()) {
      completion = "### Performance analysis\n" + std::string(2000, 'a') +
                   "\n### Algorithm design\n" + std::string(1000, 'd') + "\n### Code\n```cuda\n" +
                   sources[0] + "\n```\n";
    }
    crl::prompt::ParseOptions o;
    t0 = std::chrono::steady_clock::now();
    auto p = crl::prompt::ParseCompletion(completion, o);
    t1 = std::chrono::steady_clock::now();
    if (p.error() != crl::v1::PARSE_ERROR_UNSPECIFIED) {
      std::fprintf(stderr, "parse: %s\n", p.error_detail().c_str());
      return 1;
    }
    parse_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  std::printf("pool: 64 exemplars, %zu bytes of code; prompt about %d tokens (2 shown)\n",
              pool_bytes, tokens);
  std::printf("BuildPrompt      p50 %8.1f us   p99 %8.1f us   (%d calls, in-process)\n",
              Percentile(build_us, 0.5), Percentile(build_us, 0.99), iterations);
  std::printf("ParseCompletion  p50 %8.1f us   p99 %8.1f us   (%zu-byte completion)\n",
              Percentile(parse_us, 0.5), Percentile(parse_us, 0.99), completion.size());
  return 0;
}
