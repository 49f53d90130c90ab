// crl prompt build / crl prompt parse: contrastive prompts and completion
// parsing, in-process or on a crl-prompt service (--prompt ADDR).
//
//   crl prompt build --task PATH [--exemplars FILE.jsonl] [--k 2] [--seed S] [--json]
//   crl prompt parse FILE [--format kernelbench|native] [--json]

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/file.h"
#include "common/status.h"
#include "common/utf8.h"
#include "lib/run/task_files.h"
#include "services/cli/commands.h"
#include "services/prompt/grpc_prompt_client.h"

namespace crl::cli {
namespace {

namespace fs = std::filesystem;

struct PromptEndpoint {
  std::string address;  // empty: in-process
  ClientOptions client;
  std::vector<std::string> template_dirs;

  void Bind(OptionSet* flags) {
    flags->Add("prompt", &address, "HOST:PORT of a crl-prompt (default: in-process)");
    flags->Add("prompts_dir", &template_dirs,
               "in-process: template directories after the shipped prompts/ (yours win by name)");
    BindClientOptions(flags, &client);
  }
  absl::StatusOr<std::unique_ptr<PromptClientInterface>> Connect() const {
    if (address.empty()) return StartLocalPrompt({template_dirs});
    CRL_ASSIGN_OR_RETURN(auto c, GrpcPromptClient::Create(address, client));
    return std::unique_ptr<PromptClientInterface>(std::move(c));
  }
};

// One exemplar per line: {"variant_id", "source" | "source_file" (relative to
// the file's directory), "verdict" ("OK"), "speedup", "flags": ["SIDE_STREAM"],
// "analysis", "policy_version"}. Errors name the line and field.
absl::StatusOr<std::vector<v1::Exemplar>> ReadExemplars(const std::string& path) {
  CRL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path, "exemplars file"));
  std::vector<v1::Exemplar> pool;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    if (absl::StripAsciiWhitespace(line).empty()) continue;
    const std::string where = absl::StrCat(path, ":", line_no, ": ");
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object()) return absl::InvalidArgumentError(where + "not a JSON object");
    v1::Exemplar e;
    try {
      e.set_variant_id(j.value("variant_id", absl::StrCat("line", line_no)));
      if (j.contains("source_file")) {
        const fs::path file = fs::path(path).parent_path() / j["source_file"].get<std::string>();
        CRL_ASSIGN_OR_RETURN(std::string source, ReadFileToString(file.string(), "source_file"));
        e.set_source(source);
      } else {
        e.set_source(j.value("source", ""));
      }
      v1::Verdict verdict;
      const std::string v = j.value("verdict", "OK");
      if (!v1::Verdict_Parse("VERDICT_" + v, &verdict)) {
        return absl::InvalidArgumentError(absl::StrCat(where, "verdict: unknown '", v, "'"));
      }
      e.set_verdict(verdict);
      e.set_speedup(j.value("speedup", 0.0));
      for (const auto& f : j.value("flags", nlohmann::json::array())) {
        v1::Flag flag;
        const std::string name = f.get<std::string>();
        if (!v1::Flag_Parse(name.rfind("FLAG_", 0) == 0 ? name : "FLAG_" + name, &flag)) {
          return absl::InvalidArgumentError(absl::StrCat(where, "flags: unknown '", name, "'"));
        }
        e.add_flags(flag);
      }
      e.set_analysis(j.value("analysis", ""));
      e.set_policy_version(j.value("policy_version", ""));
    } catch (const nlohmann::json::exception& ex) {
      return absl::InvalidArgumentError(absl::StrCat(where, ex.what()));
    }
    pool.push_back(std::move(e));
  }
  return pool;
}

int Build(int argc, char** argv) {
  std::string task_path, exemplars, backend = "cuda", strategy = "buckets", template_name;
  int k = 2, buckets = 0, max_tokens = 0;
  uint64_t seed = 1;
  double temperature = 0;
  bool json = false;
  PromptEndpoint endpoint;
  OptionSet flags("crl prompt build",
                  "Prints the contrastive prompt for a task: its reference, K earlier variants\n"
                  "with their measured speedups, and the three sections to answer.");
  flags.Add("task", &task_path, "task directory (native) or .py file (KernelBench)");
  flags.Add("exemplars", &exemplars, "JSON lines of earlier variants (see docs/prompt.md)");
  flags.Add("k", &k, "exemplars to show");
  flags.Add("seed", &seed, "selection seed (same seed, same prompt)");
  flags.Add("strategy", &strategy, "buckets, top_k, uniform or none");
  flags.Add("buckets", &buckets, "score buckets (0: default 4)");
  flags.Add("temperature", &temperature, "softmax temperature over bucket scores (0: default 1)");
  flags.Add("max_tokens", &max_tokens, "token budget (0: none)");
  flags.Add("backend", &backend, "native tasks: host or cuda");
  flags.Add("template", &template_name, "template name (default: by task format)");
  flags.Add("json", &json, "print the BuildPromptResponse as JSON");
  endpoint.Bind(&flags);
  absl::Status s = flags.Parse(argc, argv, nullptr);
  v1::ExemplarStrategy strat = v1::EXEMPLAR_STRATEGY_BUCKETS;
  if (s.ok() && !flags.help_requested()) {
    if (task_path.empty()) s = absl::InvalidArgumentError("--task is required");
    else if (backend != "host" && backend != "cuda") s = absl::InvalidArgumentError("--backend must be host or cuda");
    else if (!v1::ExemplarStrategy_Parse("EXEMPLAR_STRATEGY_" + absl::AsciiStrToUpper(strategy), &strat)) {
      s = absl::InvalidArgumentError("--strategy must be buckets, top_k, uniform or none");
    }
  }
  if (!s.ok() || flags.help_requested()) return UsageError(flags, s);

  v1::BuildPromptRequest request;
  auto task = run::TaskFor(task_path, !endpoint.address.empty());
  if (!task.ok()) return UsageError(flags, task.status());
  *request.mutable_task() = std::move(*task);
  if (!exemplars.empty()) {
    auto pool = ReadExemplars(exemplars);
    if (!pool.ok()) return UsageError(flags, pool.status());
    for (auto& e : *pool) *request.add_pool() = std::move(e);
  }
  request.set_backend(backend == "host" ? v1::BACKEND_HOST : v1::BACKEND_CUDA);
  request.set_seed(seed);
  request.set_max_prompt_tokens(max_tokens);
  request.set_template_name(template_name);
  v1::ExemplarSelection* sel = request.mutable_selection();
  sel->set_strategy(strat);
  sel->set_num_exemplars(k);
  sel->set_num_buckets(buckets);
  sel->set_temperature(temperature);

  auto client = endpoint.Connect();
  if (!client.ok()) return Fail(client.status());
  auto r = (*client)->BuildPrompt(request, RequestContext::Background());
  if (!r.ok()) {
    std::fprintf(stderr, "crl prompt build: %s\n", r.status().ToString().c_str());
    return r.status().code() == absl::StatusCode::kInvalidArgument ||
                   r.status().code() == absl::StatusCode::kNotFound ||
                   r.status().code() == absl::StatusCode::kOutOfRange
               ? 2
               : 3;
  }
  if (json) {
    std::printf("%s\n", ProtoJson(*r, true).c_str());
    return 0;
  }
  for (const auto& m : r->messages()) {
    std::printf("=== %s\n%s\n\n", m.role().c_str(), m.content().c_str());
  }
  std::fprintf(stderr, "template %s, about %d tokens, exemplars [%s]\n",
               r->template_version().c_str(), r->estimated_tokens(),
               absl::StrJoin(r->exemplar_ids(), ", ").c_str());
  for (const auto& note : r->notes()) std::fprintf(stderr, "note: %s\n", note.c_str());
  return 0;
}

int Parse(int argc, char** argv) {
  std::string format = "native", backend = "cuda", finish_reason;
  bool json = false, require_analysis = false;
  PromptEndpoint endpoint;
  OptionSet flags("crl prompt parse FILE",
                  "Splits a completion into analysis, design and code, or says why it is\n"
                  "rejected. Exit 0 when parsed, 1 when rejected, 2 for usage errors.");
  flags.Add("format", &format, "kernelbench or native");
  flags.Add("backend", &backend, "native: host or cuda");
  flags.Add("finish_reason", &finish_reason, "the sampler's finish reason (length: truncated)");
  flags.Add("require_analysis", &require_analysis, "reject completions without an analysis");
  flags.Add("json", &json, "print the ParseCompletionResponse as JSON");
  endpoint.Bind(&flags);
  std::vector<std::string> args;
  absl::Status s = flags.Parse(argc, argv, &args);
  if (s.ok() && !flags.help_requested()) {
    if (args.size() != 1) s = absl::InvalidArgumentError("expected exactly one FILE");
    else if (format != "kernelbench" && format != "native") s = absl::InvalidArgumentError("--format must be kernelbench or native");
    else if (backend != "host" && backend != "cuda") s = absl::InvalidArgumentError("--backend must be host or cuda");
  }
  if (!s.ok() || flags.help_requested()) return UsageError(flags, s);
  auto text = ReadFileToString(args[0], "completion");
  if (!text.ok()) return UsageError(flags, text.status());
  v1::ParseCompletionRequest request;
  // The wire carries UTF-8; bytes that are not are replaced, not refused.
  request.set_completion(ValidUtf8(*text));
  request.set_format(format == "kernelbench" ? v1::TASK_FORMAT_KERNELBENCH
                                             : v1::TASK_FORMAT_NATIVE);
  request.set_backend(backend == "host" ? v1::BACKEND_HOST : v1::BACKEND_CUDA);
  request.set_finish_reason(finish_reason);
  request.set_require_analysis(require_analysis);
  auto client = endpoint.Connect();
  if (!client.ok()) return Fail(client.status());
  auto r = (*client)->ParseCompletion(request, RequestContext::Background());
  if (!r.ok()) return Fail(r.status());
  if (json) {
    std::printf("%s\n", ProtoJson(*r, true).c_str());
  } else if (r->error() != v1::PARSE_ERROR_UNSPECIFIED) {
    std::printf("rejected: %s: %s\n",
                v1::ParseError_Name(r->error()).substr(12).c_str(), r->error_detail().c_str());
  } else {
    std::printf("== analysis\n%s\n\n== design\n%s\n\n== code (%s, %s)\n%s", r->analysis().c_str(),
                r->design().c_str(), r->language().c_str(), r->candidate().filename().c_str(),
                r->candidate().source().c_str());
  }
  return r->error() == v1::PARSE_ERROR_UNSPECIFIED ? 0 : 1;
}

}  // namespace

int PromptCommand(int argc, char** argv) {
  constexpr const char* kUsage =
      "usage: crl prompt build --task PATH [--exemplars FILE.jsonl] [--k 2] [--seed S] [--json]\n"
      "       crl prompt parse FILE [--format kernelbench|native] [--json]\n";
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  const std::string verb = argv[1];
  if (verb == "build") return Build(argc - 1, argv + 1);
  if (verb == "parse") return Parse(argc - 1, argv + 1);
  if (IsHelpArg(verb)) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  std::fprintf(stderr, "crl prompt: unknown verb '%s'\n%s", verb.c_str(), kUsage);
  return 2;
}

}  // namespace crl::cli
