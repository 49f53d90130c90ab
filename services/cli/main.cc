// crl: the command-line client for researchers and operators.
#include <cstdio>
#include <cstring>
#include <string>

#include <unistd.h>

#include <cerrno>
#include <vector>

#include "common/metrics.h"
#include "common/options.h"
#include "common/paths.h"
#include "services/cli/commands.h"

namespace {

// The LibTorch commands live in crl-policy, next to this binary, so that the
// rest of the CLI loads no LibTorch (and travels to the GPU machine without
// it): `crl policy ...` and `crl sample --policy DIR ...` run it.
bool NeedsPolicyTool(const std::string& command, int argc, char** argv) {
  if (command == "policy") return true;
  if (command != "sample") return false;
  for (int i = 2; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--policy") || !std::strncmp(argv[i], "--policy=", 9)) return true;
  }
  return false;
}

int RunPolicyTool(int argc, char** argv) {
  const std::string tool = crl::ExecutableDir() + "/crl-policy";
  std::vector<char*> args = {const_cast<char*>(tool.c_str())};
  for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
  args.push_back(nullptr);
  execv(tool.c_str(), args.data());
  std::fprintf(stderr, "error: crl %s needs %s (built with LibTorch, installed beside crl): %s\n", argv[1],
               tool.c_str(), std::strerror(errno));
  return 3;
}

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
    "  port-report       the same candidates' crl bench results from several machines, compared\n"
    "  prompt build      the contrastive prompt for a task and earlier variants\n"
    "  prompt parse      split a completion into analysis, design and code (or a reject)\n"
    "  policy            the model library: init, tokenizer-train, tokenize, logprobs, generate\n"
    "                    (runs crl-policy)\n"
    "  sample            completions from a crl-sampler, an OpenAI-compatible endpoint or a policy\n"
    "                    (--policy DIR runs crl-policy)\n"
    "  run               runs on a crl-orchestrator: submit, watch, list, show, cancel, export\n"
    "  reward            crl's rewards for another RL engine: score completions, or serve\n"
    "                    OpenRLHF's remote reward endpoint\n"
    "  hacks             the hack database: list, show, export, seed (docs/hacks.md)\n"
    "  up                start a local cluster (six services on loopback, supervised)\n"
    "  status            the local cluster's services\n"
    "  down              stop the local cluster\n"
    "  quickstart        the embedded contrastive-RL run on a local cluster, with a report\n"
    "                    (what `make run` runs)\n"
    "\n"
    "`crl COMMAND --help` describes a command's options.\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || crl::IsHelpArg(argv[1])) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  std::string command = argv[1];
  if (command == "version" || command == "--version") {
    std::printf("crl %s\n", crl::CrlVersion());
    return 0;
  }
  if (NeedsPolicyTool(command, argc, argv)) return RunPolicyTool(argc, argv);
  if (command == "health") return crl::cli::HealthCommand(argc - 1, argv + 1);
  if (command == "eval") return crl::cli::EvalCommand(argc - 1, argv + 1);
  if (command == "demo") return crl::cli::DemoCommand(argc - 1, argv + 1);
  if (command == "bench") return crl::cli::BenchCommand(argc - 1, argv + 1);
  if (command == "baseline") return crl::cli::BaselineCommand(argc - 1, argv + 1);
  if (command == "prompt") return crl::cli::PromptCommand(argc - 1, argv + 1);
  if (command == "sample") return crl::cli::SampleCommand(argc - 1, argv + 1);
  if (command == "run") return crl::cli::RunCommand(argc - 1, argv + 1);
  if (command == "up") return crl::cli::UpCommand(argc - 1, argv + 1);
  if (command == "down") return crl::cli::DownCommand(argc - 1, argv + 1);
  if (command == "status") return crl::cli::StatusCommand(argc - 1, argv + 1);
  if (command == "quickstart") return crl::cli::QuickstartCommand(argc - 1, argv + 1);
  if (command == "reward") return crl::cli::RewardCommand(argc - 1, argv + 1);
  if (command == "hacks") return crl::cli::HacksCommand(argc - 1, argv + 1);
  if (command == "port-report") return crl::cli::PortReportCommand(argc - 1, argv + 1);
  std::fprintf(stderr, "crl: unknown command '%s'\n\n%s", command.c_str(), kUsage);
  return 2;
}
