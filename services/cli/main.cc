// crl: the command-line client for researchers and operators.
#include <cstdio>
#include <cstring>
#include <string>

#include "common/metrics.h"
#include "services/cli/commands.h"

namespace crl::cli {

int UsageError(const OptionSet& flags, const absl::Status& status) {
  if (!status.ok()) std::fprintf(stderr, "error: %s\n\n", std::string(status.message()).c_str());
  std::fputs(flags.Usage().c_str(), status.ok() ? stdout : stderr);
  return status.ok() ? 0 : 2;
}

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "error: %s\n", status.ToString().c_str());
  return 3;
}

}  // namespace crl::cli

namespace {

constexpr const char* kUsage =
    "usage: crl COMMAND [options]\n"
    "\n"
    "commands:\n"
    "  version           print the version\n"
    "  health ADDR       check a service's health (exit 0 when SERVING)\n"
    "  eval              compile and verify one candidate against a task\n"
    "  demo              the built-in suite end to end on an in-process worker\n"
    "  bench             KernelBench-format batch evaluation (fast_p table, results JSON;\n"
    "                    --cuda-l1 FILE.jsonl for CUDA-L1's released kernels)\n"
    "  baseline          reference times of KernelBench-format tasks (baseline JSON)\n"
    "  prompt build      the contrastive prompt for a task and earlier variants\n"
    "  prompt parse      split a completion into analysis, design and code (or a reject)\n"
    "  policy            the model library: init, tokenizer-train, tokenize, logprobs, generate\n"
    "\n"
    "`crl COMMAND --help` describes a command's options.\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "help")) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  std::string command = argv[1];
  if (command == "version" || command == "--version") {
    std::printf("crl %s\n", crl::CrlVersion());
    return 0;
  }
  if (command == "health") return crl::cli::HealthCommand(argc - 1, argv + 1);
  if (command == "eval") return crl::cli::EvalCommand(argc - 1, argv + 1);
  if (command == "demo") return crl::cli::DemoCommand(argc - 1, argv + 1);
  if (command == "bench") return crl::cli::BenchCommand(argc - 1, argv + 1);
  if (command == "baseline") return crl::cli::BaselineCommand(argc - 1, argv + 1);
  if (command == "prompt") return crl::cli::PromptCommand(argc - 1, argv + 1);
  if (command == "policy") return crl::cli::PolicyCommand(argc - 1, argv + 1);
  std::fprintf(stderr, "crl: unknown command '%s'\n\n%s", command.c_str(), kUsage);
  return 2;
}
